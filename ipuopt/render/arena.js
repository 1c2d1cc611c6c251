// ipuopt arena picture: buffers as boxes, program steps across, addresses up; conflicts in red.
// Reads DATA: {title, subtitle, boxes: [[id, first, end, lo, hi, alias_of]], conflicts: [[a, b, w]],
// capacity, element, steps}. Wheel zooms the address axis around the pointer; drag pans it.
(function () {
  "use strict";
  const D = window.DATA;
  const { canvas, ctx, tip } = window.PAGE;
  const LEFT = 80, TOP = 10, BOTTOM = 24;
  const paying = new Set();
  D.conflicts.forEach((c) => { paying.add(c[0]); paying.add(c[1]); });
  let a0 = 0, a1 = D.top;
  function size() { canvas.width = Math.max(400, window.innerWidth - 24); canvas.height = Math.max(300, window.innerHeight - 120); }
  function xOf(s) { return LEFT + s / D.steps * (canvas.width - LEFT - 8); }
  function yOf(a) { return canvas.height - BOTTOM - (a - a0) / (a1 - a0) * (canvas.height - TOP - BOTTOM); }
  function aOf(y) { return a0 + (canvas.height - BOTTOM - y) / (canvas.height - TOP - BOTTOM) * (a1 - a0); }
  function draw() {
    const W = canvas.width, H = canvas.height;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = "#fafafa"; ctx.fillRect(LEFT, TOP, W - LEFT, H - TOP - BOTTOM);
    ctx.strokeStyle = "#ddd";
    if ((a1 - a0) / D.element < 200) {  // memory element boundaries
      for (let e = Math.ceil(a0 / D.element) * D.element; e < a1; e += D.element) {
        ctx.beginPath(); ctx.moveTo(LEFT, yOf(e)); ctx.lineTo(W, yOf(e)); ctx.stroke();
      }
    }
    for (const b of D.boxes) {
      const x0 = xOf(b[1]), x1 = xOf(b[2]), y0 = yOf(b[4]), y1 = yOf(b[3]);
      if (y1 < TOP || y0 > H - BOTTOM) continue;
      ctx.fillStyle = b[5] ? "rgba(114,183,178,0.5)" : "rgba(76,120,168,0.75)";
      ctx.fillRect(x0, y0, x1 - x0, Math.max(1, y1 - y0));
      ctx.strokeStyle = paying.has(b[0]) ? "#e45756" : "#fff";
      ctx.lineWidth = paying.has(b[0]) ? 2 : 1;
      ctx.strokeRect(x0, y0, x1 - x0, Math.max(1, y1 - y0));
      ctx.lineWidth = 1;
      if (y1 - y0 > 13 && ctx.measureText(b[0]).width < x1 - x0 - 4) {  // the id, where it fits
        ctx.fillStyle = "#fff"; ctx.font = "10px sans-serif";
        ctx.fillText(b[0], x0 + 3, Math.min(y1, H - BOTTOM) - 3);
      }
    }
    ctx.strokeStyle = "#333"; ctx.beginPath(); ctx.moveTo(LEFT, yOf(D.capacity)); ctx.lineTo(W, yOf(D.capacity)); ctx.stroke();
    ctx.fillStyle = "#333"; ctx.font = "11px sans-serif";
    for (let k = 0; k <= 6; k++) { const a = a0 + (a1 - a0) * k / 6; ctx.fillText(Math.round(a).toString(), 2, yOf(a) + 4); }
    for (let s = 0; s <= D.steps; s += Math.max(1, Math.ceil(D.steps / 12))) ctx.fillText("step " + s, xOf(s), H - 6);
  }
  canvas.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    const a = aOf(y), hit = D.boxes.find((b) => xOf(b[1]) <= x && x < xOf(b[2]) && b[3] <= a && a < b[4]);
    if (!hit) { tip.style.display = "none"; return; }
    const c = D.conflicts.filter((k) => k[0] === hit[0] || k[1] === hit[0]).map((k) => `${k[0]}~${k[1]} (${k[2]})`);
    tip.textContent = `${hit[0]}: [${hit[3]}, ${hit[4]}) live steps [${hit[1]}, ${hit[2]})` +
      (hit[5] ? `\nalias of ${hit[5]}` : "") + (c.length ? `\nconflicts: ${c.join(", ")}` : "");
    tip.style.left = (e.clientX + 14) + "px"; tip.style.top = (e.clientY + 10) + "px"; tip.style.display = "block";
  });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect(), a = aOf(e.clientY - r.top), f = e.deltaY > 0 ? 1.25 : 0.8;
    a0 = a - (a - a0) * f; a1 = a + (a1 - a) * f; draw();
  }, { passive: false });
  document.getElementById("reset").addEventListener("click", () => { a0 = 0; a1 = D.top; draw(); });
  // "load" too: in a notebook's frame the page may run before the frame has its size
  for (const e of ["resize", "load"]) window.addEventListener(e, () => { size(); draw(); });
  const legend = document.getElementById("legend");
  if (legend) {
    legend.innerHTML = '<span><i style="background:rgba(76,120,168,0.75)"></i>buffer</span>' +
      '<span><i style="background:rgba(114,183,178,0.5)"></i>alias</span>' +
      '<span><i style="border:2px solid #e45756; background:none"></i>outlined: pays a conflict weight</span>' +
      `<span><i style="background:#333; height:2px"></i>capacity ${D.capacity} bytes</span>` +
      `<span><i style="background:#ddd; height:2px"></i>memory element boundary (${D.element} bytes)</span>`;
  }
  size(); draw();
  if (D.boxes.length) {
    const b = D.boxes[0];
    window.PAGE.selftest(D.boxes.length, D.boxes.length, (xOf(b[1]) + xOf(b[2])) / 2, (yOf(b[3]) + yOf(b[4])) / 2);
  }
})();
