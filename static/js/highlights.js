// Highlighted words of a premise or hypothesis. Offsets are [start, end) in Unicode code points, as the server
// counts characters (Python's str), not JavaScript's UTF-16 units.
//  - Read-only: an element with data-spans="[[start, end], ...]" shows its text with those spans marked.
//  - The explained-labels widget ([data-widget=label-explanation]): a worker picks labels (keys from
//    data-pick), explains each and toggles words of the two texts (arrow keys move, Space toggles).
//    The answer lives as JSON in the item's input.answer-json, which annotate.js saves, restores and sends.
// Loaded before annotate.js, so the widgets show their state before annotate.js reads it.
(function () {
  "use strict";

  function words(text) {
    const chars = Array.from(text), found = [];
    let start = -1;
    chars.forEach(function (char, index) {
      const space = /\s/.test(char);
      if (!space && start < 0) start = index;
      if (space && start >= 0) { found.push([start, index]); start = -1; }
    });
    if (start >= 0) found.push([start, chars.length]);
    return found.map(function (span) { return { start: span[0], end: span[1], text: chars.slice(span[0], span[1]).join("") }; });
  }
  function parsed(text) {
    try { const value = JSON.parse(text || "[]"); return Array.isArray(value) ? value : []; } catch (error) { return []; }
  }

  // ------------------------------------------------------------------ read-only marks
  document.querySelectorAll("[data-spans]").forEach(function (element) {
    const chars = Array.from(element.textContent.trim()), spans = parsed(element.dataset.spans);
    if (!spans.length) return;
    element.replaceChildren();
    let at = 0;
    spans.forEach(function (span) {
      const start = Math.max(at, span[0]), end = Math.min(chars.length, span[1]);
      if (end <= start) return;
      element.append(chars.slice(at, start).join(""));
      const mark = document.createElement("mark");
      mark.textContent = chars.slice(start, end).join("");
      element.append(mark);
      at = end;
    });
    element.append(chars.slice(at).join(""));
  });

  // ------------------------------------------------------------------ the explained-labels widget
  document.querySelectorAll("[data-widget=label-explanation]").forEach(function (widget) {
    const item = widget.closest("fieldset.item") || widget;
    const answer = item.querySelector("input.answer-json");
    const picks = Array.from(widget.querySelectorAll("input[data-pick]:not(.idk)"));
    const idk = widget.querySelector("input.idk");
    const minWords = Number(widget.dataset.minExplanationWords);
    const panel = function (label) { return widget.querySelector('.explained[data-label="' + CSS.escape(label) + '"]'); };

    // Each toolbar of words: one tab stop (the word last visited), arrows move among the words.
    widget.querySelectorAll(".words").forEach(function (bar) {
      words(bar.dataset.text).forEach(function (word, index) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "word";
        button.textContent = word.text;
        button.dataset.start = word.start;
        button.dataset.end = word.end;
        button.tabIndex = index === 0 ? 0 : -1;
        button.setAttribute("aria-pressed", "false");
        bar.append(button, " ");
      });
    });

    function countOf(text) { return text.trim() ? text.trim().split(/\s+/).length : 0; }
    function spansOf(bar) {
      const spans = [];
      let open = null;
      bar.querySelectorAll(".word").forEach(function (button) {
        if (button.getAttribute("aria-pressed") === "true") {
          if (open) open[1] = Number(button.dataset.end);
          else { open = [Number(button.dataset.start), Number(button.dataset.end)]; spans.push(open); }
        } else open = null;
      });
      return spans;
    }
    function picked() { return picks.filter(function (input) { return input.checked; }).map(function (input) { return input.value; }); }

    // The controls -> the answer, its summary and whether it is complete.
    function write() {
      const labels = {}, missing = [];
      picked().forEach(function (label) {
        const box = panel(label).querySelector("textarea");
        labels[label] = {
          explanation: box.value,
          premise_spans: spansOf(panel(label).querySelector('.words[data-for="premise"]')),
          hypothesis_spans: spansOf(panel(label).querySelector('.words[data-for="hypothesis"]')),
        };
        if (countOf(box.value) < minWords) missing.push(label);
      });
      const unsure = !!(idk && idk.checked);
      const empty = !unsure && !Object.keys(labels).length;
      answer.value = empty ? "" : JSON.stringify({ labels: unsure ? {} : labels, idk: unsure });
      answer.dataset.answered = !empty && !missing.length ? "1" : "0";
      answer.dataset.summary = unsure ? "I don't know" : empty ? "no label picked" : picked().map(function (label) {
        const name = panel(label).dataset.name;
        return missing.indexOf(label) >= 0 ? name + " (explanation too short)" : name;
      }).join(", ");
      picks.forEach(function (input) { panel(input.value).hidden = unsure || !input.checked; });
    }
    function changed() {
      write();
      answer.dispatchEvent(new Event("change", { bubbles: true }));  // annotate.js saves the draft
    }
    // The answer -> the controls (a restored draft, an undo, a refused submit's answer).
    function read() {
      let value = null;
      try { value = answer.value ? JSON.parse(answer.value) : null; } catch (error) { value = null; }
      const labels = value && value.labels && typeof value.labels === "object" ? value.labels : {};
      if (idk) idk.checked = !!(value && value.idk === true);
      picks.forEach(function (input) {
        const part = labels[input.value], box = panel(input.value).querySelector("textarea");
        input.checked = !!part;
        box.value = part && typeof part.explanation === "string" ? part.explanation : "";
        countWords(box);
        panel(input.value).querySelectorAll(".words").forEach(function (bar) {
          const spans = part ? parsed(JSON.stringify(part[bar.dataset.for + "_spans"] || [])) : [];
          bar.querySelectorAll(".word").forEach(function (button) {
            const start = Number(button.dataset.start), end = Number(button.dataset.end);
            const on = spans.some(function (span) { return start < span[1] && end > span[0]; });
            button.setAttribute("aria-pressed", on ? "true" : "false");
          });
        });
      });
      write();
    }
    function countWords(box) {
      const count = countOf(box.value), out = box.parentElement.querySelector(".word-count");
      out.textContent = box.value ? count + " word" + (count === 1 ? "" : "s") + (count < minWords ? " (write at least " + minWords + ")" : "") : "";
    }

    widget.addEventListener("change", function (event) {
      if (event.target === answer) return;
      if (event.target === idk && idk.checked) picks.forEach(function (input) { input.checked = false; });
      if (picks.indexOf(event.target) >= 0 && event.target.checked && idk) idk.checked = false;
      changed();
    });
    widget.addEventListener("input", function (event) {
      if (!event.target.matches("textarea")) return;
      countWords(event.target);
      changed();
    });
    widget.addEventListener("click", function (event) {
      const button = event.target.closest(".word");
      if (!button) return;
      button.setAttribute("aria-pressed", button.getAttribute("aria-pressed") === "true" ? "false" : "true");
      changed();
    });
    answer.addEventListener("answer-restored", read);

    // Keys: a label's key picks or drops it (and opens its box); Enter in a box goes on to the premise's words;
    // arrows, Home and End move among words. Space presses the word (its click toggles it); Enter on a word is
    // the page's Enter (annotate.js: on to the review), as the keys list says, and never unmarks it.
    item.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const target = event.target;
      if (target.matches("textarea")) {
        if (event.key === "Enter" && widget.contains(target)) {
          event.preventDefault();
          event.stopPropagation();
          target.closest(".explained").querySelector(".word[tabindex='0']").focus();
        }
        return;  // Escape: annotate.js leaves the box
      }
      if (target.matches(".word")) {
        const bar = target.closest(".words"), all = Array.from(bar.querySelectorAll(".word"));
        const index = all.indexOf(target);
        const moves = { ArrowRight: index + 1, ArrowDown: index + 1, ArrowLeft: index - 1, ArrowUp: index - 1, Home: 0, End: all.length - 1 };
        if (event.key in moves) {
          event.preventDefault();
          event.stopPropagation();
          const next = all[Math.max(0, Math.min(all.length - 1, moves[event.key]))];
          all.forEach(function (button) { button.tabIndex = button === next ? 0 : -1; });
          return next.focus();
        }
        if (event.key === " ") return event.stopPropagation();
        if (event.key === "Enter") return event.preventDefault();  // no click; annotate.js takes the key
      }
      if (target.matches("input, button, select, a") && !target.matches("input[data-pick]") && !target.matches(".word")) return;
      const pick = widget.querySelector('input[data-pick="' + CSS.escape(event.key.toLowerCase()) + '"]');
      if (!pick) return;
      event.preventDefault();
      event.stopPropagation();
      pick.click();
      if (pick.checked && !pick.classList.contains("idk")) panel(pick.value).querySelector("textarea").focus();
      else pick.focus();
    });

    read();
  });
})();
