// The index's search: filters the listed errors as you type, by words, class, error type and file; the
// query lives in the URL so that a search can be shared. No dependencies; works from file:// too.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("search-data").textContent);
  var rows = data.rows;
  var list = document.getElementById("results");
  var items = list.children;
  var form = document.getElementById("search");
  var box = document.getElementById("q");
  var selects = { "class": document.getElementById("f-class"), type: document.getElementById("f-type"), file: document.getElementById("f-file") };
  var columns = { file: 1, "class": 2, type: 3 };
  var count = document.getElementById("count");
  var empty = document.getElementById("empty");
  var shown = new Uint8Array(rows.length).fill(1);

  function apply() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var wanted = {};
    Object.keys(selects).forEach(function (key) {
      wanted[key] = selects[key].value ? data.names[key].indexOf(selects[key].value) : -1;
    });
    var total = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var ok = (wanted.file < 0 || row[1] === wanted.file) && (wanted["class"] < 0 || row[2] === wanted["class"]) &&
        (wanted.type < 0 || row[3] === wanted.type);
      for (var w = 0; ok && w < words.length; w++) ok = row[0].indexOf(words[w]) >= 0;
      if (ok) total++;
      if (ok !== (shown[i] === 1)) {
        items[i].hidden = !ok;
        shown[i] = ok ? 1 : 0;
      }
    }
    count.textContent = total + " of " + rows.length;
    empty.hidden = total !== 0;
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
    var url = location.pathname + (query ? "?" + query : "");
    try {
      history.replaceState(null, "", url);
    } catch (error) { // some browsers refuse it on file:// pages: keep the query in the fragment instead
      location.hash = query;
    }
  }

  function restore() {
    var text = location.search.slice(1) || location.hash.slice(1);
    var params = new URLSearchParams(text);
    box.value = params.get("q") || "";
    Object.keys(selects).forEach(function (key) {
      var value = params.get(key) || "";
      selects[key].value = data.names[key].indexOf(value) >= 0 ? value : "";
    });
  }

  function visibleLinks() {
    var links = [];
    for (var i = 0; i < rows.length; i++) if (shown[i]) links.push(items[i].firstElementChild);
    return links;
  }

  function step(from, by) {
    var links = visibleLinks();
    var at = links.indexOf(from);
    var next = at + by;
    if (next < 0) box.focus();
    else if (next < links.length) links[next].focus();
  }

  box.addEventListener("input", apply);
  Object.keys(selects).forEach(function (key) { selects[key].addEventListener("change", apply); });
  form.addEventListener("submit", function (event) { event.preventDefault(); apply(); });
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
    if (event.key === "/" && document.activeElement !== box && !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName)) {
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
