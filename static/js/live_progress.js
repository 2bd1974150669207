// The dashboard's progress box follows the project's WebSocket and reconnects when it drops.
(function () {
  const box = document.getElementById("progress");
  const state = document.getElementById("live-state");
  if (!box || !box.dataset.ws) return;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + box.dataset.ws);
    socket.onopen = function () { state.textContent = "(live)"; };
    socket.onmessage = function (event) {
      const progress = JSON.parse(event.data).progress;
      box.querySelectorAll("[data-key]").forEach(function (cell) {
        cell.textContent = progress[cell.dataset.key];
        const label = cell.nextElementSibling;  // "1 item", "2 items"
        if (label && label.dataset.one) label.textContent = progress[cell.dataset.key] === 1 ? label.dataset.one : label.dataset.many;
      });
      document.getElementById("progress-bar").value = progress.percent_done;
      document.body.dispatchEvent(new Event("progress-changed"));
    };
    socket.onclose = function (event) {
      // 4403 / 4404: the server refused this user (docs/architecture.md); trying again would not change that.
      if (event.code === 4403 || event.code === 4404) { state.textContent = "(not live: no access)"; return; }
      state.textContent = "(reconnecting…)";
      setTimeout(connect, 2000);
    };
  }
  connect();
})();
