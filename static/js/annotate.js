// Annotation pages, keyboard first: single keys answer and move on, Backspace/U undoes, [ and ] move between
// items, Enter reviews then sends a finished page, ? lists the keys. Also the slider read-out, word counts,
// drafts saved to the server as the worker goes (restored on reload), the page's countdown with one "more
// time", and the time spent on each item (not counting time the tab was hidden).
// The probability shown here is for the worker only; the server stores the raw position and maps it itself.
(function () {
  "use strict";
  const form = document.getElementById("page-form");
  if (!form) return;
  const items = Array.from(form.querySelectorAll("fieldset.item"));
  const pageStatus = document.getElementById("page-status");

  // ------------------------------------------------------------------ the slider's scale
  function logistic(t, b) { return 1 / (1 + Math.exp(-b * t)); }
  const lowFloor = logistic(-50, 0.3), highCeiling = logistic(50, 0.02);
  function probability(position) {
    const t = position / 100 - 50;
    if (t <= 0) return (logistic(t, 0.3) - lowFloor) / (0.5 - lowFloor) * 0.5;
    return 0.5 + (logistic(t, 0.02) - 0.5) / (highCeiling - 0.5) * 0.5;
  }
  // Rounded to what a hand can set: one fine step near 0 changes the odds by a few percent, so two
  // significant figures of "1 in N"; whole percents in the middle; tenths of a percent near 1.
  function describe(p) {
    if (p <= 0) return "impossible (0)";
    if (p >= 1) return "certain (100%)";
    if (p < 0.1) {
      const odds = 1 / p, unit = Math.pow(10, Math.max(0, Math.floor(Math.log10(odds)) - 1));
      return "about 1 in " + (Math.round(odds / unit) * unit).toLocaleString("en");
    }
    if (p <= 0.9) return "about " + Math.round(p * 100) + "%";
    return p * 100 >= 99.95 ? "over 99.9%" : (p * 100).toFixed(1) + "%";
  }
  const COARSE = 100, FINE = 10, PAGE = 1000, MAX = 10000;

  // ------------------------------------------------------------------ an item's answer
  function slider(f) { return f.querySelector("input.probability"); }
  function boxes(f) { return Array.from(f.querySelectorAll(".written textarea")); }
  // A task's own widget (its widget_script) keeps the answer as JSON in a hidden input.answer-json, says in
  // its data-answered ("1") and data-summary whether it is complete and how it reads, and redraws itself
  // on the "answer-restored" event.
  function widgetAnswer(f) { return f.querySelector("input.answer-json"); }
  function stateOf(f) {
    const range = slider(f);
    const reason = f.querySelector(".reason input");
    let value = null;
    if (range) {
      const hidden = f.querySelector(".slider-value").value;
      value = hidden === "" ? null : Number(hidden);
    } else if (boxes(f).length) {
      value = {};
      boxes(f).forEach(function (box) { value[box.name.split(".").pop()] = box.value; });
    } else if (widgetAnswer(f)) {
      value = widgetAnswer(f).value || null;  // kept as the JSON text: a draft holds texts
    } else {
      const radio = f.querySelector("input[type=radio]:checked");
      value = radio ? radio.value : null;
    }
    const state = { value: value };
    if (reason) state.reason = reason.value;
    if (ticks(f).length) state.reasons = ticks(f).filter(function (box) { return box.checked; }).map(function (box) { return box.value; });
    return state;
  }
  // The disagreement reasons a study may ask for with each answer (optional checkboxes in a closed details).
  function ticks(f) { return Array.from(f.querySelectorAll(".work-reasons input[type=checkbox]")); }
  function setState(f, state) {
    const value = state ? state.value : null;
    const range = slider(f);
    if (range) {
      const hidden = f.querySelector(".slider-value");
      hidden.value = value === null || value === undefined ? "" : String(value);
      range.value = hidden.value === "" ? MAX / 2 : hidden.value;
      showSlider(f);
    } else if (boxes(f).length) {
      boxes(f).forEach(function (box) {
        const part = box.name.split(".").pop();
        box.value = value && typeof value === "object" && value[part] ? value[part] : "";
        countWords(box);
      });
    } else if (widgetAnswer(f)) {
      widgetAnswer(f).value = typeof value === "string" ? value : "";
      widgetAnswer(f).dispatchEvent(new Event("answer-restored"));
    } else {
      f.querySelectorAll("input[type=radio]").forEach(function (radio) { radio.checked = radio.value === value; });
    }
    const reason = f.querySelector(".reason input");
    if (reason) reason.value = state && state.reason ? state.reason : "";
    const ticked = state && Array.isArray(state.reasons) ? state.reasons : [];
    ticks(f).forEach(function (box) { box.checked = ticked.indexOf(box.value) >= 0; });
    if (ticked.length) f.querySelector(".work-reasons").open = true;
  }
  // The slider's template marks a study whose untouched sliders count as an even chance.
  function untouchedCounts(f) { return slider(f).dataset.allowUntouched === "1"; }
  function blankBoxes(f) { return boxes(f).filter(function (box) { return !box.value.trim(); }); }
  function answered(f) {
    if (slider(f)) return untouchedCounts(f) || f.querySelector(".slider-value").value !== "";
    if (boxes(f).length) return blankBoxes(f).length === 0;
    if (widgetAnswer(f)) return widgetAnswer(f).dataset.answered === "1";
    return !!f.querySelector("input[type=radio]:checked");
  }
  function summary(f) {
    if (slider(f)) {
      const hidden = f.querySelector(".slider-value").value;
      return hidden === "" ? (untouchedCounts(f) ? "untouched (counts as 50%)" : "not set") : describe(probability(Number(hidden)));
    }
    if (boxes(f).length) {
      return boxes(f).map(function (box) { return box.value.trim() || "(empty)"; }).join(" / ");
    }
    if (widgetAnswer(f)) return widgetAnswer(f).dataset.summary || "not answered";
    const radio = f.querySelector("input[type=radio]:checked");
    return radio ? radio.parentElement.textContent.trim().replace(/\s+\S$/, "") : "not answered";
  }

  // ------------------------------------------------------------------ focus and moving between items
  function control(f) {
    return f.querySelector("input[type=radio]:checked") || f.querySelector("input[type=radio]") || slider(f) || boxes(f)[0] ||
      f.querySelector("[data-widget] input:not([type=hidden])") || f;
  }
  function itemOf(element) { return element && element.closest ? element.closest("fieldset.item") : null; }
  let lastItem = items[0] || null;
  function goTo(f) {
    if (!f) return;
    lastItem = f;
    const target = control(f);
    target.focus();
    f.scrollIntoView({ block: "nearest" });
  }
  function move(f, step) {
    const index = items.indexOf(f) + step;
    if (index >= 0 && index < items.length) goTo(items[index]);
  }
  function firstOpen() { return items.find(function (f) { return !answered(f); }); }
  // After an answer: the next item, or the first one still open, or (all done) the review.
  function advance(f) {
    const next = items[items.indexOf(f) + 1];
    if (next && !answered(next)) return goTo(next);
    const open = firstOpen();
    if (open) return goTo(open);
    finish();
  }

  // ------------------------------------------------------------------ undo
  const history = [];  // {item, before}: consecutive changes to one item are one step
  const known = new Map(items.map(function (f) { return [f, stateOf(f)]; }));
  function changed(f) {
    const now = stateOf(f);
    if (JSON.stringify(now) === JSON.stringify(known.get(f))) return;
    const top = history[history.length - 1];
    if (!top || top.item !== f) history.push({ item: f, before: known.get(f) });
    known.set(f, now);
    refresh();
    saveSoon();
  }
  function undo() {
    const step = history.pop();
    if (!step) return say("Nothing to undo.");
    setState(step.item, step.before);
    known.set(step.item, stateOf(step.item));
    refresh();
    saveSoon();
    goTo(step.item);
    say("Undone: item " + (items.indexOf(step.item) + 1) + " is back to " + summary(step.item) + ".");
  }

  // ------------------------------------------------------------------ status, review, submit
  const status = document.getElementById("unanswered");
  function say(text) { if (status) status.textContent = text; }
  function refresh() {
    const open = items.filter(function (f) { return !answered(f); }).length;
    say(open ? open + " item(s) still need an answer" : "All answered: Enter takes you to the review");
    items.forEach(function (f) { f.classList.toggle("answered", answered(f)); });
    showReview();
  }
  // The review: shown under the items as soon as every item has an answer, one line per item that takes
  // the worker back to it. Enter on a finished page brings focus to it (and the send button); Enter again sends.
  const review = document.getElementById("review");
  const submitButton = document.getElementById("submit-page");
  function showReview() {
    if (!review) return;
    const complete = !firstOpen();
    review.hidden = !complete;
    if (!complete) return;
    const list = document.getElementById("review-list");
    list.replaceChildren();
    items.forEach(function (f, index) {
      const line = document.createElement("li");
      const jump = document.createElement("button");
      jump.type = "button";
      jump.className = "link";
      jump.textContent = "Item " + (index + 1) + ": " + summary(f);
      jump.addEventListener("click", function () { goTo(f); });
      line.appendChild(jump);
      list.appendChild(line);
    });
  }
  function finish() {
    const open = firstOpen();
    if (open) { refresh(); return goTo(open); }
    if (document.activeElement === submitButton) return form.requestSubmit();
    submitButton.focus();
    (review || submitButton).scrollIntoView({ block: "nearest" });
    say("All answered: check your answers above; Enter sends the page.");
  }

  // ------------------------------------------------------------------ time spent per item (visible tab only)
  const spent = new Map();
  let current = null, since = 0;
  function enter(f) {
    const now = performance.now();
    if (current) spent.set(current, (spent.get(current) || 0) + (now - since) / 1000);
    current = f; since = now;
  }
  let resumeWith = null;
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { resumeWith = current; enter(null); }
    else if (resumeWith) { enter(resumeWith); resumeWith = null; }
  });
  function seconds(f) {
    const running = f === current ? (performance.now() - since) / 1000 : 0;
    return Math.round(((spent.get(f) || 0) + running) * 100) / 100;
  }

  // ------------------------------------------------------------------ the widgets
  function showSlider(f) {
    const range = slider(f), hidden = f.querySelector(".slider-value"), out = f.querySelector(".readout output");
    const unset = hidden.value === "";
    range.closest(".slider").classList.toggle("unset", unset);
    const text = unset ? (untouchedCounts(f) ? "untouched: counts as 50%" : "not set yet") : describe(probability(Number(range.value)));
    out.textContent = text;
    range.setAttribute("aria-valuetext", text);
  }
  function setSlider(f, position) {
    const range = slider(f);
    range.value = Math.max(0, Math.min(MAX, position));
    f.querySelector(".slider-value").value = range.value;
    showSlider(f);
    changed(f);
  }
  function countWords(box) {
    const count = box.parentElement.querySelector(".word-count");
    const low = Number(box.dataset.minWords), high = Number(box.dataset.maxWords);
    const words = box.value.trim() ? box.value.trim().split(/\s+/).length : 0;
    count.textContent = box.value ? words + " word" + (words === 1 ? "" : "s") + (words && (words < low || words > high) ? " (write " + low + " to " + high + ")" : "") : "";
  }
  items.forEach(function (f) {
    f.addEventListener("focusin", function () { lastItem = f; if (current !== f) enter(f); });
    f.addEventListener("pointerdown", function () { lastItem = f; if (current !== f) enter(f); });
    const range = slider(f);
    if (range) {
      range.addEventListener("input", function () { setSlider(f, Number(range.value)); });
      showSlider(f);
    }
    boxes(f).forEach(function (box) {
      box.addEventListener("input", function () { countWords(box); changed(f); });
      countWords(box);
    });
    f.addEventListener("change", function () { changed(f); });
    // Inside the reasons only Tab and Space (and Enter on the summary, which opens it) act: a letter there
    // must not pick a label behind the worker's back, so it goes no further than the list.
    const group = f.querySelector(".work-reasons");
    if (group) {
      group.addEventListener("keydown", function (event) {
        if (event.ctrlKey || event.metaKey || event.altKey) return;
        if (/^[a-z0-9 ]$/i.test(event.key) || (event.key === "Enter" && event.target.matches("summary"))) event.stopPropagation();
      });
    }
  });

  // ------------------------------------------------------------------ keys
  // Where typing goes: keys are text there, except Escape (leave the box) and Enter (on to the next).
  function typing(target) {
    return target.isContentEditable || target.matches("textarea, select, input:not([type=radio]):not([type=checkbox]):not([type=range])");
  }
  const keysHelp = document.getElementById("keys-help");
  function showKeys() { if (keysHelp && !keysHelp.open) keysHelp.showModal(); }
  const keysButton = document.getElementById("show-keys");
  if (keysButton) keysButton.addEventListener("click", showKeys);

  function leaveBox(box, onward) {
    const f = itemOf(box);
    if (!f) return box.blur();
    if (box.matches(".written textarea")) {
      if (!onward) return f.focus();
      const all = boxes(f), next = all[all.indexOf(box) + 1];
      if (next) return next.focus();
      return answered(f) ? advance(f) : (blankBoxes(f)[0] || box).focus();
    }
    const answer = f.querySelector("input[type=radio]:checked") || f.querySelector("input[type=radio]") || f;
    answer.focus();
  }
  function sliderKey(f, event) {
    const range = slider(f), value = Number(range.value), coarse = event.shiftKey ? FINE : COARSE;
    const moves = {
      ArrowRight: value + coarse, ArrowUp: value + coarse, ArrowLeft: value - coarse, ArrowDown: value - coarse,
      PageUp: value + PAGE, PageDown: value - PAGE, Home: 0, End: MAX,
    };
    if (!(event.key in moves)) return false;
    setSlider(f, moves[event.key]);
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (keysHelp && keysHelp.open) return;  // the dialog has the keys (Esc closes it)
    const target = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {  // send now, from anywhere (review skipped)
      event.preventDefault();
      const open = firstOpen();
      return open ? (refresh(), goTo(open)) : form.requestSubmit();
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(target)) {
      if (event.key === "Escape") { event.preventDefault(); leaveBox(target, false); }
      else if (event.key === "Enter" && itemOf(target)) { event.preventDefault(); leaveBox(target, true); }
      return;
    }
    const f = itemOf(target) || (target === document.body ? lastItem : null);
    if (event.key === "?") { event.preventDefault(); return showKeys(); }
    if (!f) return;  // on a link or a button outside the items: their own keys
    const range = slider(f);
    if (range && target === range && sliderKey(f, event)) return event.preventDefault();
    if (event.key === "Enter") {
      event.preventDefault();
      if (range && f.querySelector(".slider-value").value === "") setSlider(f, Number(range.value));  // keep the value shown
      return answered(f) && range ? advance(f) : finish();
    }
    const key = event.key.toLowerCase();
    const radio = f.querySelector('input[type=radio][data-key="' + CSS.escape(key) + '"]');
    if (radio) {
      event.preventDefault();
      radio.checked = true;
      changed(f);
      return advance(f);
    }
    if (key === "r" && f.querySelector(".reason input")) { event.preventDefault(); return f.querySelector(".reason input").focus(); }
    if (key === "backspace" || key === "u") { event.preventDefault(); return undo(); }
    if (key === "[") { event.preventDefault(); return move(f, -1); }
    if (key === "]") { event.preventDefault(); return move(f, 1); }
  });

  form.addEventListener("submit", function (event) {
    if (firstOpen()) {
      event.preventDefault();
      return finish();
    }
    enter(null);
    items.forEach(function (f) {
      f.querySelector(".seconds").value = seconds(f).toFixed(2);
      const hidden = f.querySelector(".slider-value");
      if (hidden && hidden.value === "") hidden.value = slider(f).value;  // an allowed untouched slider
    });
    clearLocal();
  });

  // ------------------------------------------------------------------ drafts: server first, this browser as the fallback
  const draftUrl = pageStatus && pageStatus.dataset.draftUrl;
  const localKey = pageStatus ? "nli-studio-draft-" + pageStatus.dataset.assignment : null;
  const saveState = document.getElementById("save-state");
  const csrf = form.querySelector("[name=csrfmiddlewaretoken]");
  function draftData() {
    const data = {};
    items.forEach(function (f) {
      const state = stateOf(f);
      state.seconds = seconds(f);
      data[f.dataset.item] = state;
    });
    return data;
  }
  function clearLocal() { if (localKey) localStorage.removeItem(localKey); }
  let saveTimer = null;
  function saveSoon() {
    if (!draftUrl) return;
    clearTimeout(saveTimer);
    saveState.textContent = "Saving…";
    saveTimer = setTimeout(save, 700);
  }
  function save() {
    const data = draftData();
    localStorage.setItem(localKey, JSON.stringify({ data: data, synced: false }));
    return fetch(draftUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf.value },
      body: JSON.stringify({ answers: data }),
      credentials: "same-origin",
    }).then(function (response) {
      return response.json().then(function (body) {
        if (response.status === 409) {  // expired, or released after a long silence: a late send is still kept
          saveState.textContent = "This page's time is over: answers sent now are kept but marked late";
          clearLocal();
          return;
        }
        if (!response.ok) throw new Error(body.error || "refused");
        localStorage.setItem(localKey, JSON.stringify({ data: data, synced: true }));
        saveState.textContent = "Saved";
        deadline = Date.parse(body.expires_at);
      });
    }).catch(function () {
      saveState.textContent = "Not saved to the server yet (kept in this browser; trying again)";
    });
  }
  function restore() {
    const script = document.getElementById("page-draft");
    let data = script ? JSON.parse(script.textContent) : {};
    const local = localKey && JSON.parse(localStorage.getItem(localKey) || "null");
    if (local && !local.synced) data = local.data;  // answers the server never got (a lost connection)
    if (document.getElementById("form-error")) return;  // a refused submit shows what was sent
    items.forEach(function (f) {
      const saved = data[f.dataset.item];
      if (!saved) return;
      setState(f, saved);
      known.set(f, stateOf(f));
      if (saved.seconds) spent.set(f, saved.seconds);
    });
    if (Object.keys(data).length && saveState) saveState.textContent = "Your saved answers are back";
  }

  // ------------------------------------------------------------------ the page's time
  let deadline = pageStatus ? Date.parse(pageStatus.dataset.expires) : null;
  const skew = pageStatus ? Date.parse(pageStatus.dataset.now) - Date.now() : 0;  // server clock minus ours
  const countdown = document.getElementById("countdown");
  const warning = document.getElementById("time-warning");
  const moreTime = document.getElementById("more-time");
  function tick() {
    const left = Math.max(0, Math.round((deadline - (Date.now() + skew)) / 1000));
    countdown.textContent = String(Math.floor(left / 60)).padStart(2, "0") + ":" + String(left % 60).padStart(2, "0");
    const low = left <= 300;
    pageStatus.classList.toggle("low", low);
    if (low && warning.hidden) {
      warning.hidden = false;
      document.getElementById("time-warning-text").textContent = left ?
        "Less than 5 minutes left on this page." : "Time is up: answers sent now are kept but marked late.";
    }
    if (!low && !warning.hidden) warning.hidden = true;
  }
  if (moreTime) {
    moreTime.addEventListener("click", function () {
      fetch(pageStatus.dataset.extendUrl, { method: "POST", headers: { "X-CSRFToken": csrf.value }, credentials: "same-origin" })
        .then(function (response) { return response.json().then(function (body) { return [response.ok, body]; }); })
        .then(function (result) {
          moreTime.hidden = true;
          if (result[0]) { deadline = Date.parse(result[1].expires_at); tick(); say("You have more time for this page."); }
          else say("No more time: " + result[1].error + ".");
          goTo(firstOpen() || lastItem);
        });
    });
  }

  // ------------------------------------------------------------------ start
  restore();
  refresh();
  if (pageStatus) {
    tick();
    setInterval(tick, 1000);
    save();  // the first heartbeat
    setInterval(save, 60000);  // a heartbeat, so an open tab keeps its page
  }
  // After a refused submit, focus the field the error names (where the page has one); else the first open item.
  const error = document.getElementById("form-error");
  const wrong = error && Array.from(form.querySelectorAll("[data-field]")).find(function (el) { return el.dataset.field === error.dataset.field; });
  if (wrong) {
    if (wrong.closest("details")) wrong.closest("details").open = true;
    wrong.setAttribute("aria-invalid", "true");
    wrong.focus();
  } else if (items.length && !error) {
    goTo(firstOpen() || items[0]);
  }
})();
