// Shared by every ipuopt page: error capture, the canvas and tooltip, the test hook.
window.PAGE = (function () {
  "use strict";
  const errors = [];
  window.addEventListener("error", (e) => errors.push(String(e.message)));
  const consoleError = console.error;
  console.error = (...args) => { errors.push(args.join(" ")); consoleError(...args); };
  const canvas = document.getElementById("plot");
  return {
    errors: errors, canvas: canvas, ctx: canvas.getContext("2d"), tip: document.getElementById("tip"),
    // Opened with #selftest (by the tests): hover at (x, y) on the canvas and report rows,
    // items, the tooltip and every console error into the page.
    selftest(rows, items, x, y) {
      if (location.hash !== "#selftest") return;
      const rect = canvas.getBoundingClientRect();
      canvas.dispatchEvent(new MouseEvent("mousemove", { clientX: rect.left + x, clientY: rect.top + y }));
      const out = document.createElement("pre");
      out.id = "selftest";
      out.textContent = JSON.stringify({ rows: rows, items: items, tooltip: this.tip.textContent,
                                         tooltipShown: this.tip.style.display === "block", errors: errors });
      document.body.appendChild(out);
    },
  };
})();
