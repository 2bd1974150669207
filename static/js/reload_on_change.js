// A select with data-reload-param reloads the page with its value in that query parameter
// (the import preview's format, a new study's task type): the form that fits is drawn by the server.
// What was typed in the form's other fields travels in the query too, so it is not lost on the way; a field
// still holding the value the page came with (the old task type's default) does not, so the new type's
// default takes its place.
document.querySelectorAll("select[data-reload-param]").forEach(function (select) {
  select.addEventListener("change", function (event) {
    const url = new URL(location.href);
    if (select.form && select.form.hasAttribute("data-keep-typed")) {
      select.form.querySelectorAll("input[type=text], input:not([type]), input[type=number], textarea").forEach(function (field) {
        if (field.name && field.value.trim() && field.value !== field.defaultValue) url.searchParams.set(field.name, field.value);
      });
    }
    url.searchParams.set(select.dataset.reloadParam, event.target.value);
    location.href = url;
  });
});
