"""API pagination: DRF's page numbers, held to what the schema says `page` is (an integer)."""

from rest_framework.pagination import PageNumberPagination


class PageNumbersOnly(PageNumberPagination):
    """DRF reads `?page=` (empty) as page 1 and `?page=last` as the last page, so a client's mistake
    would pass unnoticed; here any `page` given goes to the paginator, which refuses what is not a
    number (404 "Invalid page.", as DRF answers `?page=abc`)."""

    def get_page_number(self, request, paginator):
        return request.query_params.get(self.page_query_param, 1)
