// Annotation pages: keyboard answers, slider read-out, written-sentence word counts, time spent per item,
// submit guard.
// The probability shown here is for the worker only; the server recomputes it from the raw position.
(function () {
  "use strict";
  const form = document.getElementById("page-form");
  if (!form) return;

  function logistic(t, b) { return 1 / (1 + Math.exp(-b * t)); }
  const lowFloor = logistic(-50, 0.3), highCeiling = logistic(50, 0.02);
  function probability(position) {
    const t = position / 100 - 50;
    if (t <= 0) return (logistic(t, 0.3) - lowFloor) / (0.5 - lowFloor) * 0.5;
    return 0.5 + (logistic(t, 0.02) - 0.5) / (highCeiling - 0.5) * 0.5;
  }
  function describe(p) {
    if (p <= 0) return "impossible (0)";
    if (p >= 1) return "certain (1)";
    const text = p.toFixed(p < 0.01 ? 6 : 3);
    if (p < 0.5) {
      const n = Math.round(1 / p);
      return text + " — about 1 in " + n.toLocaleString("en");
    }
    return text + " — about " + Math.round(p * 100) + "%";
  }

  // Time spent: seconds while focus or pointer is inside each item.
  const spent = new Map();
  let current = null, since = 0;
  function enter(fieldset) {
    const now = performance.now();
    if (current) spent.set(current, (spent.get(current) || 0) + (now - since) / 1000);
    current = fieldset; since = now;
  }
  const items = Array.from(form.querySelectorAll("fieldset.item"));
  items.forEach(function (fieldset) {
    fieldset.addEventListener("focusin", function () { if (current !== fieldset) enter(fieldset); });
    fieldset.addEventListener("pointerdown", function () { if (current !== fieldset) enter(fieldset); });
  });

  function blankBoxes(fieldset) {
    return Array.from(fieldset.querySelectorAll(".written textarea")).filter(function (box) { return !box.value.trim(); });
  }
  function answered(fieldset) {
    const hidden = fieldset.querySelector(".slider-value");
    if (hidden) return hidden.value !== "";
    if (fieldset.querySelector(".written textarea")) return blankBoxes(fieldset).length === 0;
    return !!fieldset.querySelector("input[type=radio]:checked");
  }
  // Where typing goes: answer-key shortcuts never fire there.
  function typing(target) {
    return target.isContentEditable || target.matches("textarea, select, input:not([type=radio]):not([type=checkbox]):not([type=range])");
  }
  const status = document.getElementById("unanswered");
  function refresh() {
    const open = items.filter(function (f) { return !answered(f); }).length;
    status.textContent = open ? open + " item(s) still need an answer" : "All answered: Ctrl+Enter submits";
    items.forEach(function (f) { f.classList.toggle("answered", answered(f)); });
  }

  items.forEach(function (fieldset) {
    const slider = fieldset.querySelector("input.probability");
    if (slider) {
      const hidden = fieldset.querySelector(".slider-value");
      const out = fieldset.querySelector("output");
      const show = function () { out.textContent = describe(probability(Number(slider.value))); };
      const take = function () { hidden.value = slider.value; show(); refresh(); };
      slider.addEventListener("input", take);
      slider.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { event.preventDefault(); take(); }
        else if (event.shiftKey && (event.key === "ArrowLeft" || event.key === "ArrowRight")) {
          event.preventDefault();  // Shift+arrow: coarse steps of 1% of the track
          slider.value = Number(slider.value) + (event.key === "ArrowRight" ? 100 : -100);
          take();
        }
      });
      if (hidden.value !== "") show();
    }
    fieldset.querySelectorAll(".written textarea").forEach(function (box) {
      const count = box.parentElement.querySelector(".word-count");
      const low = Number(box.dataset.minWords), high = Number(box.dataset.maxWords);
      const show = function () {
        const words = box.value.trim() ? box.value.trim().split(/\s+/).length : 0;
        count.textContent = words + " word" + (words === 1 ? "" : "s") + (words && (words < low || words > high) ? " (write " + low + " to " + high + ")" : "");
      };
      box.addEventListener("input", function () { show(); refresh(); });
      box.addEventListener("keydown", function (event) {
        // One sentence per box: plain Enter adds no line break (Ctrl+Enter still submits the page).
        if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) event.preventDefault();
      });
      if (box.value) show();
    });
    fieldset.addEventListener("change", refresh);
    fieldset.addEventListener("keydown", function (event) {
      if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
      const radio = fieldset.querySelector('input[type=radio][data-key="' + event.key.toLowerCase() + '"]');
      if (radio) { radio.checked = true; radio.focus(); refresh(); event.preventDefault(); }
    });
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); form.requestSubmit(); }
  });

  form.addEventListener("submit", function (event) {
    const missing = items.filter(function (f) { return !answered(f); });
    if (missing.length) {
      event.preventDefault();
      refresh();
      const first = blankBoxes(missing[0])[0] || missing[0].querySelector("input");
      if (first) first.focus();
      return;
    }
    enter(null);
    items.forEach(function (f) {
      f.querySelector(".seconds").value = (spent.get(f) || 0).toFixed(2);
    });
  });
  refresh();
  // After a refused submit, focus the field the error names (where the page has one); else the first answer.
  const error = document.getElementById("form-error");
  const wrong = error && Array.from(form.querySelectorAll("[data-field]")).find(function (el) { return el.dataset.field === error.dataset.field; });
  if (wrong) {
    wrong.setAttribute("aria-invalid", "true");
    wrong.focus();
  }
  const first = form.querySelector("fieldset.item input:not([type=hidden]), fieldset.item textarea");
  if (first && !error) first.focus();
})();
