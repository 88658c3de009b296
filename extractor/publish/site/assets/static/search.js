// The index's search: answers a pasted error (a message, a traceback, a log excerpt) as `extractor match` does,
// with find.js over the tables in paste.js (its constants in find_constants.js): the records that raised it
// first, their values filled in; and lists the errors that match as you type (words, class, error type, file), a
// page of them at a time. The query lives in the URL so that a search (a paste too) can be shared. No
// dependencies; works from file:// too. Only the shown rows are in the DOM, so a keystroke costs the same for 50
// errors or 5,000.
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
  var answer = document.getElementById("answer");
  var answersList = document.getElementById("answers");
  var answerNote = document.getElementById("answer-note");
  var pasteData = window.EXTRACTOR_PASTE;
  var pasted = pasteData && window.ExtractorFinder ? new window.ExtractorFinder(pasteData) : null;
  var rowOf = {};
  rows.forEach(function (row, i) { rowOf[row[0]] = i; });
  var MIN_PASTE = 12; // characters of a query before it is read as a paste too
  var carried = Object.create(null); // a record's id -> the values the paste showed, as its page's address fragment

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function rowHtml(row) {
    return '<li><a href="errors/' + row[0] + ".html" + escapeHtml(carried[row[0]] || "") + '"><span class="cls">' +
      escapeHtml(data.names["class"][row[3]]) +
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

  // The message with each value the paste showed in place of its placeholder, marked.
  function filled(hit) {
    var message = pasteData.messages[hit.template], spans = pasteData.spans[hit.template];
    var parts = [];
    hit.values.forEach(function (pair) {
      var groups = pair[0];
      if (!groups.length || !spans[groups[0]]) return;
      parts.push([spans[groups[0]][0], spans[groups[groups.length - 1]][1], pair[1]]);
    });
    parts.sort(function (a, b) { return a[0] - b[0]; });
    var html = "", at = 0;
    parts.forEach(function (part) {
      if (part[0] < at) return;
      html += escapeHtml(message.slice(at, part[0])) + '<mark class="ph">' + escapeHtml(part[2]) + "</mark>";
      at = part[1];
    });
    return html + escapeHtml(message.slice(at));
  }

  function how(hit, paste) {
    if (hit.cut) return "partial";
    var normalized = paste.steps.length || hit.period || hit.typo || !hit.exact;
    return (hit.typo ? "typo, " : "") + (normalized ? "normalized" : "exact");
  }

  // The values a paste showed, by placeholder index, as a record page's fragment (record.js shows them there).
  function fragment(hit) {
    var params = new URLSearchParams();
    hit.values.forEach(function (pair) {
      pair[0].forEach(function (group) { params.set("p" + group, pair[1]); });
    });
    var text = params.toString();
    return text ? "#" + text : "";
  }

  function answerHtml(hit, paste, weak) {
    var id = pasteData.records[hit.template][0], row = rows[rowOf[id]];
    var others = pasteData.records[hit.template].length - 1;
    if (!weak && !(id in carried)) carried[id] = fragment(hit);
    return '<li' + (weak ? ' class="weak"' : "") + '><a href="errors/' + id + ".html" +
      escapeHtml(weak ? fragment(hit) : carried[id]) + '"><span class="cls">' +
      escapeHtml(data.names["class"][row[3]]) + '</span> <span class="msg">' + filled(hit) + "</span></a>" +
      ' <span class="where">' + escapeHtml(data.names.file[row[2]]) + ":" + row[5] + ' <span class="how">(' +
      (weak ? "weak, " : "") + how(hit, paste) + ", " + Math.floor(hit.bits) + " bits" +
      (others ? ", and " + others + " other place" + (others > 1 ? "s" : "") : "") +
      ")</span></span></li>";
  }

  // Who else prints a paste's text, in background.py's Elsewhere.words and its message.
  function elsewhereWords(hit) {
    var entry = pasteData.background[hit.template - pasteData.own], said;
    if (entry[0] === "python") said = "raised by Python itself (" + entry[2] + ", Python " + entry[1] + ")";
    else if (entry[0] === "argparse") {
      var prog = null;
      hit.values.forEach(function (pair) {
        if (prog === null && pair[0].length === 1 && pair[0][0] === entry[4]) prog = pair[1];
      });
      said = prog ? "an argparse usage error of `" + prog + "`: see `" + prog + " --help`"
        : "an argparse usage error of the command line: see its --help";
    } else said = entry[0] + " " + entry[1] + " raises the same text";
    return said + ": " + entry[3];
  }

  // What the paste answers: the records its confident answers name (in order), shown above the list.
  function answerPaste(text) {
    answersList.textContent = "";
    carried = Object.create(null);
    answerNote.hidden = true;
    if (!pasted || text.replace(/\s+/g, "").length < MIN_PASTE) { answer.hidden = true; return []; }
    var got = pasted.answer(text), html = "", ids = [];
    got.confident.forEach(function (hit) {
      var id = pasteData.records[hit.template][0];
      if (ids.indexOf(id) < 0) { ids.push(id); html += answerHtml(hit, got.paste, false); }
    });
    if (got.elsewhere.length) {
      answerNote.textContent = got.elsewhere.map(elsewhereWords).join("; ") + ".";
      answerNote.hidden = false;
      got.weak.forEach(function (hit) { html += answerHtml(hit, got.paste, true); });
    }
    answersList.innerHTML = html;
    answer.hidden = !html && !got.elsewhere.length;
    return ids;
  }

  function apply() {
    var answered = answerPaste(box.value);
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var wanted = {};
    Object.keys(selects).forEach(function (key) {
      // (an option's value is the name's index: an attribute cannot hold a name's carriage return)
      wanted[key] = selects[key].value !== "" ? +selects[key].value : -1;
    });
    matches = [];
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var ok = (wanted.file < 0 || row[2] === wanted.file) && (wanted["class"] < 0 || row[3] === wanted["class"]) &&
        (wanted.type < 0 || row[4] === wanted.type);
      for (var w = 0; ok && w < words.length; w++) ok = texts[i].indexOf(words[w]) >= 0;
      if (ok && answered.indexOf(row[0]) < 0) matches.push(i);
    }
    // The records a paste answers come first (the filters still apply to them).
    var first = answered.map(function (id) { return rowOf[id]; }).filter(function (i) {
      var row = rows[i];
      return (wanted.file < 0 || row[2] === wanted.file) && (wanted["class"] < 0 || row[3] === wanted["class"]) &&
        (wanted.type < 0 || row[4] === wanted.type);
    });
    matches = first.concat(matches);
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
      if (selects[key].value !== "") params.set(key, data.names[key][+selects[key].value]);
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
      var at = data.names[key].indexOf(params.get(key) || "");
      selects[key].value = params.get(key) !== null && at >= 0 ? String(at) : "";
    });
  }

  function step(from, by) {
    var links = Array.prototype.slice.call(list.querySelectorAll("a"));
    var next = links.indexOf(from) + by;
    if (next < 0) box.focus();
    else if (next < links.length) links[next].focus();
    else if (shown < matches.length) { showMore(PAGE); step(from, by); }
  }

  // The box grows with what it holds, up to ten lines: a pasted traceback, and a long line as it wraps; empty,
  // with its placeholder as it wraps (on a phone, three lines or so).
  function fit() {
    var style = getComputedStyle(box), held = box.value;
    var line = parseFloat(style.lineHeight) || 1.25 * parseFloat(style.fontSize);
    var edges = parseFloat(style.borderTopWidth) + parseFloat(style.borderBottomWidth);
    var padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
    if (!held) box.value = box.placeholder; // (measured as the text it shows; no input event is sent)
    box.style.height = "auto";
    var needed = box.scrollHeight + edges;
    if (!held) box.value = "";
    box.style.height = Math.min(needed, 10 * line + padding + edges) + "px";
  }
  box.addEventListener("input", function () { fit(); apply(); });
  window.addEventListener("resize", fit);
  Object.keys(selects).forEach(function (key) { selects[key].addEventListener("change", apply); });
  document.getElementById("search").addEventListener("submit", function (event) { event.preventDefault(); apply(); });
  more.addEventListener("click", function () { showMore(500); });
  box.addEventListener("keydown", function (event) {
    var atEnd = box.selectionStart === box.value.length && box.selectionEnd === box.value.length;
    if (event.key === "ArrowDown" && atEnd) { event.preventDefault(); step(null, 1); }
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
  // For tests and scripts: the record a paste is answered with first (the one the page lists first), or null.
  window.extractorSearch = {
    first: function (text) {
      if (!pasted || text.replace(/\s+/g, "").length < MIN_PASTE) return null;
      var got = pasted.answer(text);
      return got.confident.length ? pasteData.records[got.confident[0].template][0] : null;
    },
  };
  restore();
  fit();
  apply();
  document.documentElement.dataset.ready = "1";
})();
