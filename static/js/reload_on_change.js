// A select with data-reload-param reloads the page with its value in that query parameter
// (the import preview's format, a new study's task type): the form that fits is drawn by the server.
document.querySelectorAll("select[data-reload-param]").forEach(function (select) {
  select.addEventListener("change", function (event) {
    const url = new URL(location.href);
    url.searchParams.set(select.dataset.reloadParam, event.target.value);
    location.href = url;
  });
});
