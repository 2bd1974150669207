// Copy buttons: a [data-copy] button copies the value of the field it names. The clipboard API needs a secure
// context (HTTPS or localhost); elsewhere, or when it is refused, the text is selected for Ctrl+C instead.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  const status = document.querySelector(`[data-copied-for="${button.dataset.copy}"]`);
  const select = () => {
    field.focus();
    field.select();
    status.textContent = "Selected: press Ctrl+C (or ⌘C) to copy it.";
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(() => { status.textContent = "Copied."; }, select);
  } else {
    select();
  }
});
