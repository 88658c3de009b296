// The index's search: lists the errors that match as you type (words, class, error type, file), a page of
// them at a time; the query lives in the URL so that a search can be shared. No dependencies; works from
// file:// too. Only the shown rows are in the DOM, so a keystroke costs the same for 50 errors or 5,000.
(function () {
  "use strict";
  var PAGE = 100;
  var data = JSON.parse(document.getElementById("search-data").textContent);
  var rows = data.rows; // [id, first words, file, class, type, line, searched text]
  // What a query is looked for in: the searched text, the id, the file and the class (kept once in the page).
  var lower = { file: data.names.file.map(function (n) { return n.toLowerCase(); }),
                "class": data.names["class"].map(function (n) { return n.toLowerCase(); }) };
  var texts = rows.map(function (row) {
    return row[6] + " " + row[0] + " " + lower.file[row[2]] + " " + lower["class"][row[3]];
  });
  var list = document.getElementById("results");
  var box = document.getElementById("q");
  var selects = { "class": document.getElementById("f-class"), type: document.getElementById("f-type"), file: document.getElementById("f-file") };
  var columns = { file: 2, "class": 3, type: 4 };
  var count = document.getElementById("count");
  var empty = document.getElementById("empty");
  var moreLine = document.getElementById("more-line");
  var more = document.getElementById("more");
  var matches = [];
  var shown = 0;

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function rowHtml(row) {
    return '<li><a href="errors/' + row[0] + '.html"><span class="cls">' + escapeHtml(data.names["class"][row[3]]) +
      '</span> <span class="msg">' + escapeHtml(row[1]) + '</span></a> <span class="where">' +
      escapeHtml(data.names.file[row[2]]) + ":" + row[5] + "</span></li>";
  }

  function showMore(size) {
    var end = Math.min(matches.length, shown + size);
    var html = "";
    for (var i = shown; i < end; i++) html += rowHtml(rows[matches[i]]);
    list.insertAdjacentHTML("beforeend", html);
    shown = end;
    var left = matches.length - shown;
    moreLine.hidden = left === 0;
    more.textContent = "Show " + Math.min(left, 500) + " more of " + left;
  }

  function apply() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var wanted = {};
    Object.keys(selects).forEach(function (key) {
      wanted[key] = selects[key].value ? data.names[key].indexOf(selects[key].value) : -1;
    });
    matches = [];
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var ok = (wanted.file < 0 || row[2] === wanted.file) && (wanted["class"] < 0 || row[3] === wanted["class"]) &&
        (wanted.type < 0 || row[4] === wanted.type);
      for (var w = 0; ok && w < words.length; w++) ok = texts[i].indexOf(words[w]) >= 0;
      if (ok) matches.push(i);
    }
    list.textContent = "";
    shown = 0;
    showMore(PAGE);
    count.textContent = matches.length + " of " + rows.length;
    empty.hidden = matches.length !== 0;
    remember();
  }

  function state() {
    var params = new URLSearchParams();
    if (box.value) params.set("q", box.value);
    Object.keys(selects).forEach(function (key) {
      if (selects[key].value) params.set(key, selects[key].value);
    });
    return params.toString();
  }

  function remember() {
    var query = state();
    try {
      history.replaceState(null, "", location.pathname + (query ? "?" + query : ""));
    } catch (error) { // a browser that refuses it on file:// pages: keep the query in the fragment instead
      location.hash = query;
    }
  }

  function restore() {
    var params = new URLSearchParams(location.search.slice(1) || location.hash.slice(1));
    box.value = params.get("q") || "";
    Object.keys(selects).forEach(function (key) {
      var value = params.get(key) || "";
      selects[key].value = data.names[key].indexOf(value) >= 0 ? value : "";
    });
  }

  function step(from, by) {
    var links = Array.prototype.slice.call(list.querySelectorAll("a"));
    var next = links.indexOf(from) + by;
    if (next < 0) box.focus();
    else if (next < links.length) links[next].focus();
    else if (shown < matches.length) { showMore(PAGE); step(from, by); }
  }

  box.addEventListener("input", apply);
  Object.keys(selects).forEach(function (key) { selects[key].addEventListener("change", apply); });
  document.getElementById("search").addEventListener("submit", function (event) { event.preventDefault(); apply(); });
  more.addEventListener("click", function () { showMore(500); });
  box.addEventListener("keydown", function (event) {
    if (event.key === "ArrowDown") { event.preventDefault(); step(null, 1); }
    else if (event.key === "Escape" && box.value) { box.value = ""; apply(); }
  });
  list.addEventListener("keydown", function (event) {
    if (event.target.tagName !== "A") return;
    if (event.key === "ArrowDown") { event.preventDefault(); step(event.target, 1); }
    else if (event.key === "ArrowUp") { event.preventDefault(); step(event.target, -1); }
  });
  document.addEventListener("keydown", function (event) {
    var active = document.activeElement;
    if (event.key === "/" && !/^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(active ? active.tagName : "")) {
      event.preventDefault();
      box.focus();
    }
  });
  document.querySelectorAll("a[data-filter]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      selects[link.dataset.filter].value = link.dataset.value;
      apply();
      document.getElementById("results-title").scrollIntoView();
    });
  });
  restore();
  apply();
  document.documentElement.dataset.ready = "1";
})();
