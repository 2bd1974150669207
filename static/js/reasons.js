// Disagreement reasons: inside the list, a category's key ticks its box (and focuses it); after htmx saves,
// focus goes to the status line so a keyboard user hears the result and goes on from there.
document.addEventListener("keydown", (event) => {
  const list = event.target.closest && event.target.closest("[data-reason-keys]");
  if (!list || event.ctrlKey || event.metaKey || event.altKey || event.key.length !== 1) return;
  const box = list.querySelector(`input[data-key="${CSS.escape(event.key.toLowerCase())}"]`);
  if (!box) return;
  event.preventDefault();
  box.checked = !box.checked;
  box.focus();
});
document.addEventListener("htmx:afterSwap", (event) => {
  const status = event.detail.target.id === "reasons" ? document.getElementById("reasons-status") : null;
  if (status) status.focus();
});
