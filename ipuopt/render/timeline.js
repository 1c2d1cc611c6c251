// ipuopt timeline: rows of lanes (or boxes) against time on a canvas, zoom, pan, tooltips.
// Reads DATA (set by the page): {title, subtitle, rows: [label], items: [[row, begin, end, kind, ref]],
// kinds: {kind: [colour, name]}, refs: [detail text], marks: [[row, begin, end, colour]], unit}.
// Items narrower than a pixel are summed into per-pixel coverage, so 100,000 intervals on
// 1,472 tiles draw as a density picture when zoomed out and as boxes when zoomed in.
(function () {
  "use strict";
  const D = window.DATA;
  const { canvas, ctx, tip } = window.PAGE;
  const LEFT = 90, TOP = 24, BOTTOM = 6;
  let t0 = D.t0, t1 = D.t1 > D.t0 ? D.t1 : D.t0 + 1;
  const fitRows = () => Math.max(3, Math.min(18, Math.floor((window.innerHeight - 140) / Math.max(1, D.rows.length))));
  let rowH = fitRows();
  let firstRow = 0;
  const byRow = D.rows.map(() => []);
  D.items.forEach((it, i) => byRow[it[0]].push(i));

  function size() {
    canvas.width = Math.max(400, window.innerWidth - 24);
    canvas.height = Math.max(200, window.innerHeight - 120);
  }
  function xOf(t) { return LEFT + (t - t0) / (t1 - t0) * (canvas.width - LEFT - 8); }
  function tOf(x) { return t0 + (x - LEFT) / (canvas.width - LEFT - 8) * (t1 - t0); }
  function visibleRows() { return Math.floor((canvas.height - TOP - BOTTOM) / rowH); }

  function draw() {
    const W = canvas.width, H = canvas.height;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = "#fafafa";
    ctx.fillRect(LEFT, TOP, W - LEFT, H - TOP);
    ctx.font = "11px sans-serif";
    ctx.fillStyle = "#333";
    const n = Math.min(D.rows.length - firstRow, visibleRows());
    const cols = W - LEFT;
    for (let r = 0; r < n; r++) {
      const row = firstRow + r, y = TOP + r * rowH;
      ctx.fillStyle = "#333";
      if (rowH >= 9) ctx.fillText(D.rows[row], 4, y + rowH - 2);
      if (r % 2) { ctx.fillStyle = "#f0f0f0"; ctx.fillRect(LEFT, y, W - LEFT, rowH); }
      const cover = {};
      for (const i of byRow[row]) {
        const it = D.items[i];
        if (it[2] < t0 || it[1] > t1) continue;
        const x0 = xOf(it[1]), x1 = xOf(it[2]);
        if (x1 - x0 < 1) {  // aggregate: coverage per pixel column and kind
          const c = Math.floor(x0) - LEFT, key = it[3];
          if (c < 0 || c >= cols) continue;
          (cover[key] = cover[key] || new Float32Array(cols))[c] += x1 - x0;
          continue;
        }
        ctx.fillStyle = D.kinds[it[3]][0];
        ctx.fillRect(Math.max(LEFT, x0), y + 1, Math.min(W, x1) - Math.max(LEFT, x0), rowH - 2);
        if (x1 - x0 > 3 && rowH > 5) { ctx.strokeStyle = "#fff"; ctx.strokeRect(x0, y + 1, x1 - x0, rowH - 2); }
      }
      for (const key in cover) {
        ctx.fillStyle = D.kinds[key][0];
        const col = cover[key];
        for (let c = 0; c < cols; c++) {
          if (col[c] > 0) { ctx.globalAlpha = Math.min(1, 0.25 + col[c]); ctx.fillRect(LEFT + c, y + 1, 1, rowH - 2); }
        }
        ctx.globalAlpha = 1;
      }
    }
    for (const m of D.marks) {  // critical chain, hazards, barrier marks
      const r = m[0] - firstRow;
      if (r < 0 || r >= n) continue;
      ctx.strokeStyle = m[3]; ctx.lineWidth = 2;
      ctx.strokeRect(xOf(m[1]), TOP + r * rowH, Math.max(2, xOf(m[2]) - xOf(m[1])), rowH);
      ctx.lineWidth = 1;
    }
    for (const [at, label, colour] of D.lines || []) {  // horizon, best bound, program end
      const x = xOf(at);
      if (x < LEFT || x > W) continue;
      ctx.fillStyle = colour; ctx.fillRect(x, TOP, 1.5, H - TOP);
      ctx.fillText(label, Math.min(x + 3, W - 90), TOP + 12);
    }
    ctx.fillStyle = "#333";
    for (let k = 0; k <= 8; k++) {
      const t = t0 + (t1 - t0) * k / 8, x = xOf(t);
      ctx.fillText(Math.round(t).toString(), x - 10, 14);
      ctx.fillRect(x, 18, 1, 5);
    }
    document.getElementById("view").textContent =
      `${D.unit} ${Math.round(t0)}..${Math.round(t1)}, rows ${firstRow + 1}-${firstRow + n} of ${D.rows.length}`;
  }

  function itemAt(x, y) {
    const row = firstRow + Math.floor((y - TOP) / rowH);
    if (row < 0 || row >= D.rows.length || x < LEFT) return null;
    const t = tOf(x), slack = (t1 - t0) / (canvas.width - LEFT) * 2;
    let best = null;
    for (const i of byRow[row]) {
      const it = D.items[i];
      if (it[1] - slack <= t && t < it[2] + slack && (best === null || it[2] - it[1] < D.items[best][2] - D.items[best][1])) best = i;
    }
    return best;
  }

  canvas.addEventListener("mousemove", (e) => {
    const rect = canvas.getBoundingClientRect();
    const i = itemAt(e.clientX - rect.left, e.clientY - rect.top);
    if (i === null) { tip.style.display = "none"; return; }
    const it = D.items[i];
    tip.textContent = `${D.rows[it[0]]} ${D.kinds[it[3]][1]}\n${D.refs[it[4]]}`;
    tip.style.left = (e.clientX + 14) + "px";
    tip.style.top = (e.clientY + 10) + "px";
    tip.style.display = "block";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    if (e.shiftKey) {  // scroll rows
      firstRow = Math.max(0, Math.min(D.rows.length - 1, firstRow + Math.sign(e.deltaY) * 5));
    } else {  // zoom time around the pointer
      const rect = canvas.getBoundingClientRect(), t = tOf(e.clientX - rect.left);
      const f = e.deltaY > 0 ? 1.25 : 0.8;
      t0 = t - (t - t0) * f; t1 = t + (t1 - t) * f;
    }
    draw();
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = [e.clientX, e.clientY, t0, t1, firstRow]; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const dt = (e.clientX - drag[0]) / (canvas.width - LEFT) * (drag[3] - drag[2]);
    t0 = drag[2] - dt; t1 = drag[3] - dt;
    firstRow = Math.max(0, Math.min(D.rows.length - 1, drag[4] - Math.round((e.clientY - drag[1]) / rowH)));
    draw();
  });
  document.getElementById("reset").addEventListener("click", () => { t0 = D.t0; t1 = D.t1; firstRow = 0; draw(); });
  document.getElementById("taller").addEventListener("click", () => { rowH = Math.min(40, rowH + 2); draw(); });
  document.getElementById("shorter").addEventListener("click", () => { rowH = Math.max(2, rowH - 2); draw(); });
  window.addEventListener("resize", () => { size(); draw(); });
  // in a notebook's frame the page may run before the frame has its size
  window.addEventListener("load", () => { rowH = fitRows(); size(); draw(); });

  const legend = document.getElementById("legend");
  for (const k in D.kinds) {
    const s = document.createElement("span");
    s.innerHTML = `<i style="background:${D.kinds[k][0]}"></i>${D.kinds[k][1]}`;
    legend.appendChild(s);
  }
  for (const c in D.outlines || {}) {  // outlines and lines are named too
    const s = document.createElement("span");
    s.innerHTML = `<i style="border:2px solid ${c}; background:none"></i>outlined: ${D.outlines[c]}`;
    legend.appendChild(s);
  }
  for (const [, label, colour] of D.lines || []) {
    const s = document.createElement("span");
    s.innerHTML = `<i style="background:${colour}; width:3px"></i>${label}`;
    legend.appendChild(s);
  }
  size();
  draw();

  if (location.hash === "#selftest" && D.items.length) {  // hover the first item
    const it = D.items[0];
    firstRow = it[0]; draw();
    window.PAGE.selftest(D.rows.length, D.items.length, (xOf(it[1]) + xOf(it[2])) / 2, TOP + rowH / 2);
  }
})();
