"""The API's JSON parser: DRF's, reading through common.request_json (a depth limit, no NaN)."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from common import request_json


class DepthLimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return request_json.loads(stream.read())
        except ValueError as error:
            raise ParseError(f"the body is not JSON this API reads: {error}") from None
