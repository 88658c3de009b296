// Where templates' literal text stands in a paste, and what `extractor match` answers it with: the browser's copy
// of extractor/query/match/ (find.py's Finder.answer, and the modules it calls: paste.py, the paste made plain and
// its skeleton; locate.py, where a template stands; score.py, which hits are confident and their order;
// normalize.py, what Python prints itself), step by step, in the same order. Its constants are those modules'
// own, in find_constants.js (generated from find.py's SHARED); a catalog's tables come from the page
// (`Finder.to_json()`). tests/test_find_parity.py runs this file in Node on a corpus of pastes and checks every
// hit of every answer against Python's; tests/test_site.py checks the page's first answers in Chromium. No regex
// engine runs a template: literal rows are looked for with indexOf, in order, so the work is linear in the paste
// for each template tried. Python counts characters where JavaScript counts UTF-16 units: a skeleton here holds
// one unit per character (see narrowed), and the few bounds counted in a text are counted in characters.
(function (root) {
  "use strict";

  var C = typeof module === "object" && module.exports && typeof require === "function"
    ? require("./find_constants.js") : root.EXTRACTOR_FIND_CONSTANTS;
  var has = Object.prototype.hasOwnProperty;
  var SPACE = new RegExp("^[" + C.WHITESPACE + "]$"); // what Python's str.isspace() and strip() take
  var RE = {
    ansi: new RegExp(C.ANSI, "g"),
    entity: new RegExp(C.ENTITY, "g"),
    escape: new RegExp(C.ESCAPE, "g"),
    gaps: new RegExp(C.GAPS, "g"),
    spaces: new RegExp(C.SPACES, "g"),
    classShownIn: new RegExp(C.CLASS_SHOWN_IN),
    classBefore: new RegExp(C.CLASS_BEFORE),
    rewrap: new RegExp(C.REWRAP),
    classAt: new RegExp(C.CLASS_AT, "g"),
  };
  var LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g; // a surrogate left alone
  var KIND = {}; // each shape's texts (kinds.py's KIND_TEXTS), fullmatched
  Object.keys(C.KIND_TEXTS).forEach(function (shape) { KIND[shape] = new RegExp("^(?:" + C.KIND_TEXTS[shape] + ")$"); });
  var SENTENCE = new RegExp(C.SENTENCE);
  var TRAILING_SPACE = new RegExp("[" + C.WHITESPACE + "]+$");
  function Finder(data) {
    var self = this;
    this.classes = data.classes;
    this.catchAll = data.catchAll;
    this.classWeight = data.classWeight;
    this.kinds = data.kinds;
    this.own = data.own;
    this.libraries = data.libraries;
    this.packages = data.packages;
    this.builtinBases = data.builtinBases;
    // A character beyond the BMP in a template's text stands for one unit (a lone low surrogate) in its rows
    // and keys, as in a paste's skeleton (see narrowed): Python counts it as one character.
    this.wide = {};
    var wide = 0, narrow = function (row) { return narrowed(row, self.wide, function () { return ++wide; }); };
    this.keys = data.keys.map(function (keys) { return keys.map(narrow); });
    this.programs = data.programs.map(function (programs) {
      return programs.map(function (program) {
        var items = [], texts = [], words = [];
        program.forEach(function (item) {
          if (typeof item[0] === "string") { items.push(narrow(item[0])); texts.push(item[1]); words.push(item[2]); }
          else { items.push({ groups: item }); texts.push(""); words.push([]); }
        });
        return { items: items, texts: texts, words: words };
      });
    });
    this.keylessByClass = {};
    for (var i = 0; i < this.keys.length; i++) {
      if (!this.keys[i].length) {
        if (!has.call(this.keylessByClass, this.classes[i])) this.keylessByClass[this.classes[i]] = [];
        this.keylessByClass[this.classes[i]].push(i);
      }
    }
  }

  // ------------------------------------------------------------------------------------------ strings

  function isWord(c) { return c !== undefined && /^[A-Za-z0-9_]$/.test(c); }
  function isSpace(c) { return c !== undefined && c !== "" && SPACE.test(c); }
  function findIn(s, sub, start, end) { // Python's s.find(sub, start, end)
    var at = s.indexOf(sub, start);
    return at >= 0 && at + sub.length <= end ? at : -1;
  }
  function rfindIn(s, sub, start, end) { // Python's s.rfind(sub, start, end)
    var from = end - sub.length;
    if (from < start) return -1;
    var at = s.lastIndexOf(sub, from);
    return at >= start ? at : -1;
  }
  function bisectLeft(list, value) {
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (list[mid] < value) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function last(name) { var parts = name.split("."); return parts[parts.length - 1]; }
  function stripped(text) { // Python's text.strip()
    var start = 0, end = text.length;
    while (start < end && SPACE.test(text[start])) start++;
    while (end > start && SPACE.test(text[end - 1])) end--;
    return start === 0 && end === text.length ? text : text.slice(start, end);
  }
  function lineBreaksOff(text) { // Python's text.rstrip("\r\n")
    var end = text.length;
    while (end > 0 && (text[end - 1] === "\n" || text[end - 1] === "\r")) end--;
    return text.slice(0, end);
  }

  // Python's characters, where JavaScript's strings hold UTF-16 units: a character beyond the BMP is two.
  function pair(text, i) { // whether a surrogate pair starts at i
    var c = text.charCodeAt(i), d = text.charCodeAt(i + 1);
    return c >= 0xd800 && c < 0xdc00 && d >= 0xdc00 && d < 0xe000;
  }
  function wide(text) { return /[\ud800-\udfff]/.test(text); }
  function length(text) { // Python's len(text)
    if (!wide(text)) return text.length;
    var n = 0;
    for (var i = 0; i < text.length; i += pair(text, i) ? 2 : 1) n++;
    return n;
  }
  function head(text, n) { // Python's text[:n]
    if (text.length <= n) return text;
    var i = 0;
    for (var k = 0; k < n && i < text.length; k++) i += pair(text, i) ? 2 : 1;
    return text.slice(0, i);
  }
  function tail(text, n) { // Python's text[-n:]
    if (text.length <= n) return text;
    var i = text.length;
    for (var k = 0; k < n && i > 0; k++) i -= i > 1 && pair(text, i - 2) ? 2 : 1;
    return text.slice(i);
  }
  function back(text, position, n) { // where Python's text[max(0, position - n):position] starts
    var i = position;
    for (var k = 0; k < n && i > 0; k++) i -= i > 1 && pair(text, i - 2) ? 2 : 1;
    return i;
  }
  function codeOrder(a, b) { // Python's comparison of two texts, character by character
    if (!wide(a) && !wide(b)) return a < b ? -1 : a > b ? 1 : 0;
    var x = Array.from(a), y = Array.from(b);
    for (var i = 0; i < x.length && i < y.length; i++) {
      if (x[i] !== y[i]) return x[i].codePointAt(0) < y[i].codePointAt(0) ? -1 : 1;
    }
    return x.length - y.length;
  }
  // A skeleton (or a template's row) with each character beyond the BMP, and each lone surrogate, one unit: a
  // lone low surrogate, the same for the same character in every template (`table`), one other for any other
  // (it stands in no template). A skeleton's positions are then Python's; `where` keeps one place per character.
  function narrowed(text, table, fresh, where) {
    if (!wide(text)) return text;
    var out = "", kept = where ? [] : null;
    for (var i = 0; i < text.length; i++) {
      var two = pair(text, i), c = two ? text.slice(i, i + 2) : text[i];
      if (kept) kept.push(where[i]);
      if (two) i++;
      if (c.charCodeAt(0) < 0xd800 || c.charCodeAt(0) >= 0xe000) { out += c; continue; }
      if (!has.call(table, c)) {
        if (!fresh) { out += "\udc00"; continue; }
        table[c] = String.fromCharCode(0xdc00 + Math.min(fresh(), 0x3ff));
      }
      out += table[c];
    }
    if (kept) { where.length = 0; for (var k = 0; k < kept.length; k++) where.push(kept[k]); }
    return out;
  }

  // ----------------------------------------------------------------------------------------- the paste

  Finder.prototype.plain = function (text, entities) {
    var steps = [];
    if (text.indexOf("\r") >= 0) text = text.replace(/\r\n/g, "\n").replace(/\r/g, "\n");
    if (text.indexOf("\x1b") >= 0 || text.indexOf("^[") >= 0) {
      var undone = text.replace(RE.ansi, "");
      if (undone !== text) { text = undone; steps.push("ansi"); }
    }
    if (entities && text.indexOf("&") >= 0) {
      var decoded = text.replace(RE.entity, function (whole, name) {
        if (name[0] === "#") {
          var code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
          return code > 0 && code < 0x110000 && !(code >= 0xd800 && code < 0xe000) ? String.fromCodePoint(code) : whole;
        }
        return has.call(C.ENTITIES, name) ? C.ENTITIES[name] : whole;
      });
      if (decoded !== text) { text = decoded; steps.push("html"); }
    }
    if (text.indexOf("\n") >= 0) {
      var unprefixed = withoutLinePrefix(text);
      if (unprefixed !== null) { text = unprefixed; steps.push("line-prefix"); }
    }
    var typed = text;
    if (typed.indexOf("\u00e2\u20ac") >= 0) {
      C.MOJIBAKE.forEach(function (pair) { typed = typed.split(pair[0]).join(pair[1]); });
    }
    var out = "";
    for (var i = 0; i < typed.length; i++) {
      var c = typed[i];
      out += has.call(C.CHARACTERS, c) ? C.CHARACTERS[c] : c;
    }
    if (out !== text) { text = out; steps.push("characters"); }
    return [text, steps];
  };

  function withoutLinePrefix(text) {
    var lines = text.split("\n");
    var shown = lines.filter(function (line) { return stripped(line) !== ""; });
    if (shown.length < 2) return null;
    var shapes = shown.map(function (line) { return head(line, C.PREFIX_MAX).replace(/[0-9]/g, "0"); });
    var first = shapes[0], lastShape = shapes[0];
    shapes.forEach(function (shape) {
      if (codeOrder(shape, first) < 0) first = shape;
      if (codeOrder(shape, lastShape) > 0) lastShape = shape;
    });
    var common = 0;
    while (common < first.length && common < lastShape.length && first[common] === lastShape[common]) common++;
    var cut = rfindIn(first, " ", 0, common) + 1;
    var prefix = first.slice(0, cut);
    if (stripped(prefix) === "" || RE.classShownIn.test(prefix)) return null;
    return lines.map(function (line) { return stripped(line) !== "" ? line.slice(cut) : line; }).join("\n");
  }

  var KEPT = /[A-Z"]/g;
  function kept(c) { return c === '"' ? "'" : c.toLowerCase(); }

  // Python's skeleton(): its text, and where each of its characters stands in the text.
  function skeleton(text) {
    var out = [], where = [], position = 0, gap, i;
    RE.gaps.lastIndex = 0;
    while ((gap = RE.gaps.exec(text)) !== null) {
      if (gap.index > position) {
        out.push(text.slice(position, gap.index));
        for (i = position; i < gap.index; i++) where.push(i);
      }
      position = gap.index + gap[0].length;
    }
    if (position < text.length) {
      out.push(text.slice(position));
      for (i = position; i < text.length; i++) where.push(i);
    }
    return [out.join("").replace(KEPT, kept), where];
  }

  Finder.prototype.paste = function (text, entities) {
    var made = this.plain(text, entities !== false);
    var sk = skeleton(made[0]);
    var where = sk[1], bare = narrowed(sk[0], this.wide, null, where);
    var cuts = [];
    var at = bare.indexOf("...");
    while (at >= 0) { cuts.push(at); at = bare.indexOf("...", at + 3); }
    cuts.push(bare.length);
    var paste = { text: made[0], steps: made[1], bare: bare, where: where, cuts: cuts };
    // Where skeleton position `index` stands in the text (its end, for one past the last); and where the
    // character there ends.
    paste.at = function (index) { return index < where.length ? where[index] : paste.text.length; };
    paste.after = function (index) { var at = where[index]; return at + (pair(paste.text, at) ? 2 : 1); };
    return paste;
  };

  function unescaped(text) { // paste.py's unescape
    if (text.indexOf("\\") < 0) return text;
    var out = text.replace(RE.escape, function (whole, escape) {
      if (escape[0] === "u" || escape[0] === "x") return String.fromCharCode(parseInt(escape.slice(1), 16));
      return has.call(C.ESCAPES, escape) ? C.ESCAPES[escape] : escape;
    });
    // (Python joins a JSON surrogate pair into one character, and makes each surrogate left alone U+FFFD.)
    if (text.indexOf("\\u") >= 0) out = out.replace(LONE, "\ufffd");
    return out;
  }

  // ------------------------------------------------------------------------------------------- finding

  Finder.prototype.candidates = function (paste) {
    var found = {};
    var out = [];
    if (paste.bare) {
      for (var i = 0; i < this.keys.length; i++) {
        var keys = this.keys[i];
        for (var k = 0; k < keys.length; k++) {
          if (paste.bare.indexOf(keys[k]) >= 0) { found[i] = true; break; }
        }
      }
    }
    var re = RE.classAt, m, keyless = this.keylessByClass;
    re.lastIndex = 0;
    while ((m = re.exec(paste.text)) !== null) {
      if (has.call(keyless, last(m[1]))) keyless[last(m[1])].forEach(function (i) { found[i] = true; });
      if (m[0] === "") re.lastIndex++;
    }
    for (var index in found) out.push(Number(index));
    return out.sort(function (a, b) { return a - b; });
  };

  Finder.prototype.find = function (paste) {
    return ranked(this.pass(paste, this.candidates(paste)));
  };

  Finder.prototype.pass = function (paste, candidates) {
    var self = this, hits = [];
    candidates.forEach(function (index) {
      if (!self.programs[index].length) {
        var whole = self.wholeMessage(index, -1, paste);
        if (whole !== null && !whole.values[0][1]) hits.push(whole);
        return;
      }
      var best = null;
      [false, true].some(function (near) {
        self.programs[index].forEach(function (program, number) {
          var hit = self.place(index, number, program, paste, near);
          if (hit !== null && (best === null || better(hit, best))) best = hit;
        });
        return best !== null;
      });
      if (best !== null) hits.push(best);
    });
    demote(hits);
    var catchAll = this.catchAll, classWeight = this.classWeight;
    var standing = hits.filter(function (hit) { return !hit.demoted && !hit.inside && !catchAll[hit.template]; });
    standing.forEach(function (hit) {
      if (hit.shownClass !== null && has.call(classWeight, hit.shownClass)) {
        hit.info += classWeight[hit.shownClass];
      }
    });
    // score.py's judge: the hit's bits, one threshold.
    hits.forEach(function (hit) {
      hit.bits = hit.info - C.PERIOD_BITS * (hit.period ? 1 : 0) - C.TYPO_BITS * (hit.typo ? 1 : 0) - C.CUT_BITS * (hit.cut ? 1 : 0);
      if (hit.demoted || hit.inside || catchAll[hit.template]) { refute(hit); return; }
      var rival = hit.openEnd || standing.some(function (o) {
        return o !== hit && o.literal >= hit.literal && o.start < hit.end && hit.start < o.end;
      });
      if (rival) hit.bits -= C.RIVAL_BITS;
      hit.confident = hit.literal >= C.MIN_LIT && hit.bits >= C.CONFIDENT_BITS;
    });
    return hits;
  };

  function literalRows(items) {
    var out = [];
    items.forEach(function (item, k) { if (typeof item === "string") out.push(k); });
    return out;
  }

  Finder.prototype.place = function (index, number, program, paste, near) {
    var items = program.items, literals = literalRows(items);
    if (!literals.length) return this.wholeMessage(index, number, paste);
    var first = literals[0], head = items[first], text = program.texts[first];
    var places = this.occurrences(paste.bare, head, 0, near), fallback = null;
    for (var p = 0; p < places.length; p++) {
      var at = places[p][0];
      if (first > 0 && inClassPrefix(paste.text, paste.at(at))) continue;
      if (!startsWord(paste, at, head, first > 0 && isSpace(text[0]), first > 0)) continue;
      var hit = this.forward(index, number, program, paste, literals, [places[p][0], places[p][1]], places[p][2], near);
      if (hit !== null && !hit.inside) return hit;
      if (hit !== null && fallback === null) fallback = hit;
    }
    if (fallback !== null) return fallback;
    if (near) return null;
    if (literals.length === 1 && head[head.length - 1] === "." && head.length > 1) {
      var short = head.slice(0, -1), shorts = this.occurrences(paste.bare, short, 0, false);
      for (var q = 0; q < shorts.length; q++) {
        if (startsWord(paste, shorts[q][0], short, false, first > 0) && endsMessage(paste, shorts[q][1])) {
          return this.made(index, number, program, paste, [[shorts[q][0], shorts[q][1]]], { period: true });
        }
      }
    }
    return this.cutFirst(index, number, program, paste, head, first);
  };

  Finder.prototype.forward = function (index, number, program, paste, literals, head, typo, near) {
    var items = program.items, at = head[0];
    if (!clear(paste, at, items[literals[0]]) || (literals.length > 1 && !fits(paste, head, program, literals[0], false))) {
      return null;
    }
    var spans = [head], position = head[1], lastRow = literals[literals.length - 1];
    for (var r = 1; r < literals.length; r++) {
      var k = literals[r], row = items[k];
      var ends = k === lastRow && k === items.length - 1;
      var places = this.occurrences(paste.bare, row, position, near), found = null;
      for (var p = 0; p < places.length; p++) {
        if (fits(paste, [places[p][0], places[p][1]], program, k, ends)) { found = places[p]; break; }
      }
      if (found !== null) {
        spans.push([found[0], found[1]]);
        typo += found[2];
        position = found[1];
        continue;
      }
      if (ends && row[row.length - 1] === "." && row.length > 1 && !near) {
        var short = row.slice(0, -1), shorts = this.occurrences(paste.bare, short, position, false);
        for (var q = 0; q < shorts.length; q++) {
          if (endsMessage(paste, shorts[q][1])) {
            return this.made(index, number, program, paste, spans.concat([[shorts[q][0], shorts[q][1]]]), { period: true });
          }
        }
      }
      if (ends && row === "." && !near) { // the message's last value, then its final period, left out
        var dropped = this.made(index, number, program, paste, spans, { period: true, typo: typo });
        if (dropped !== null) return dropped;
      }
      return this.cut(index, number, program, paste, spans, position, k, typo);
    }
    if (lastRow === items.length - 1 && !endsWord(paste, spans[spans.length - 1][1], items[lastRow], false, false)) return null;
    return this.made(index, number, program, paste, spans, { typo: typo });
  };

  Finder.prototype.cut = function (index, number, program, paste, spans, position, k, typo) {
    var row = program.items[k], bare = paste.bare, cut = null;
    for (var c = 0; c < paste.cuts.length; c++) if (paste.cuts[c] >= position) { cut = paste.cuts[c]; break; }
    if (cut !== null && !breaks(paste.text, paste.at(position), paste.at(cut))) {
      var shown = 0;
      for (var length = Math.min(row.length - 1, cut - position); length > 0; length--) {
        if (bare.startsWith(row.slice(0, length), cut - length)) { shown = length; break; }
      }
      if (findIn(bare, row.slice(0, C.DIVERGE), position, cut - shown) >= 0) {
        // the row starts in the value, then departs from it: another text
      } else if (shown) {
        return this.made(index, number, program, paste, spans.concat([[cut - shown, cut]]), { cut: cut, typo: typo });
      } else {
        return this.made(index, number, program, paste, spans, { cut: cut, openEnd: true, typo: typo });
      }
    }
    var total = 0;
    spans.forEach(function (span) { total += span[1] - span[0]; });
    var sentence = this.sentence(paste, program, k, position, total);
    if (sentence !== null) {
      return this.made(index, number, program, paste, spans.concat([sentence]), { cut: sentence[1], typo: typo });
    }
    return null;
  };

  Finder.prototype.cutFirst = function (index, number, program, paste, head, first) {
    var bare = paste.bare, key = head.slice(0, C.MIN_CUT);
    if (head.length <= C.MIN_CUT) return null;
    for (var c = 0; c < paste.cuts.length; c++) {
      var cut = paste.cuts[c];
      var at = rfindIn(bare, key, 0, cut);
      while (at >= 0 && cut - at < head.length) {
        if (bare.startsWith(head.slice(0, cut - at), at) && startsWord(paste, at, head, false, first > 0)) {
          return this.made(index, number, program, paste, [[at, cut]], { cut: cut });
        }
        at = rfindIn(bare, key, 0, at);
      }
    }
    var sentence = this.sentence(paste, program, first, 0, 0);
    if (sentence !== null && sentence[1] - sentence[0] >= C.MIN_CUT) {
      return this.made(index, number, program, paste, [sentence], { cut: sentence[1] });
    }
    return null;
  };

  Finder.prototype.wholeMessage = function (index, number, paste) {
    var re = RE.classAt, m;
    re.lastIndex = 0;
    while ((m = re.exec(paste.text)) !== null) {
      if (last(m[1]) === this.classes[index]) {
        var start = m.index + m[0].length, end = lineEnd(paste.text, start);
        var value = stripped(paste.text.slice(start, end));
        var groups = number >= 0 ? this.programs[index][number].items[0].groups : [];
        return newHit(index, number, [], start, end, [[groups, value]], [], 0, 0, { shownClass: this.classes[index] });
      }
      if (m[0] === "") re.lastIndex++;
    }
    return null;
  };

  Finder.prototype.occurrences = function (bare, row, start, near) {
    var out = [], found = bare.indexOf(row, start), tries = 0;
    while (found >= 0 && tries < C.MAX_STARTS) { out.push([found, found + row.length, 0]); found = bare.indexOf(row, found + 1); tries++; }
    if (!near || row.length < C.TYPO_MIN) return out;
    var budget = row.length < C.TYPO_LONG ? 1 : 2, half = Math.floor(row.length / 2);
    var starts = [], left = row.slice(0, half), right = row.slice(half), shift;
    found = bare.indexOf(left, start); tries = 0;
    while (found >= 0 && tries < C.TYPO_TRIES) { starts.push(found); found = bare.indexOf(left, found + 1); tries++; }
    found = bare.indexOf(right, start); tries = 0;
    while (found >= 0 && tries < C.TYPO_TRIES) {
      for (shift = -budget; shift <= budget; shift++) if (found - half + shift >= start) starts.push(found - half + shift);
      found = bare.indexOf(right, found + 1); tries++;
    }
    var unique = starts.filter(function (v, i) { return starts.indexOf(v) === i; }).sort(function (a, b) { return a - b; });
    var shifts = [0];
    for (shift = 1; shift <= budget; shift++) shifts.push(-shift, shift);
    var best = {}, digits = (row.match(/[0-9]+/g) || []).join(",");
    unique.forEach(function (begin) {
      shifts.forEach(function (move) {
        var end = begin + row.length + move;
        if (end > bare.length || end <= begin) return;
        var edge = C.TYPO_EDGE;
        if (bare.slice(begin, begin + edge) !== row.slice(0, edge) || bare.slice(end - edge, end) !== row.slice(-edge)) return;
        if ((bare.slice(begin, end).match(/[0-9]+/g) || []).join(",") !== digits) return;
        var distance = levenshtein(bare.slice(begin, end), row, budget);
        if (distance > 0 && distance <= budget && (!(begin in best) || distance < best[begin][1])) best[begin] = [end, distance];
      });
    });
    Object.keys(best).map(Number).sort(function (a, b) { return a - b; }).forEach(function (begin) {
      out.push([begin, best[begin][0], best[begin][1]]);
    });
    return out;
  };

  // The optimal string alignment distance (rapidfuzz's OSA): edits, two neighbours swapped counting one.
  function levenshtein(a, b, limit) {
    var before = null, previous = [], current, i, j;
    for (j = 0; j <= b.length; j++) previous.push(j);
    for (i = 1; i <= a.length; i++) {
      current = [i];
      for (j = 1; j <= b.length; j++) {
        var cost = a[i - 1] === b[j - 1] ? 0 : 1;
        var best = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2] + 1);
        current.push(best);
      }
      before = previous;
      previous = current;
    }
    return Math.min(previous[b.length], limit + 1);
  }

  Finder.prototype.sentence = function (paste, program, k, position, shown) {
    var row = program.items[k];
    var end = rfindIn(row, ".", 0, row.length - 1);
    while (end >= 0 && shown + end + 1 >= C.MIN_SENTENCE) {
      var starts = [row.slice(0, end + 1), row.slice(0, end)];
      for (var t = 0; t < starts.length; t++) {
        var start = starts[t];
        if (shown + start.length < C.MIN_SENTENCE || !start) continue;
        var spaced = isSpace(program.texts[k][0]);
        var places = this.occurrences(paste.bare, start, position, false);
        for (var p = 0; p < places.length; p++) {
          if (findIn(paste.bare, row.slice(0, C.DIVERGE), position, places[p][0]) >= 0) break;
          if (startsWord(paste, places[p][0], row, spaced, k > 0) && endsQuote(paste, places[p][1], start)) {
            return [places[p][0], places[p][1]];
          }
        }
      }
      end = rfindIn(row, ".", 0, end);
    }
    return null;
  };

  Finder.prototype.made = function (index, number, program, paste, spans, options) {
    var items = program.items, text = paste.text, self = this;
    var cut = options.cut === undefined ? null : options.cut, period = !!options.period;
    var typo = options.typo || 0, openEnd = !!options.openEnd;
    var rows = literalRows(items);
    var firstAt = paste.at(spans[0][0]);
    var lastSpan = spans[spans.length - 1];
    var lastEnd = lastSpan[1] > lastSpan[0] ? paste.after(lastSpan[1] - 1) : paste.at(lastSpan[0]);
    var start = firstAt;
    if (rows[0] > 0) start = leadStart(text, firstAt);
    var got = this.shownClass(text, start, index), shown = got[1];
    if (!got[0]) return null;
    var end = lastEnd;
    var quoted = start > 0 && (text[start - 1] === "'" || text[start - 1] === '"');
    var holes = [], values = [], rowsShown = spans.length;
    var kinds = this.kinds[index];
    // The message starts inside a sentence: no class before it, its first literal text after a word.
    var inside = shown === null && rows[0] === 0 && goesOnBefore(text, start);
    for (var k = 0; k < items.length; k++) {
      var item = items[k];
      if (typeof item === "string") continue;
      var before = 0;
      rows.forEach(function (r) { if (r < k) before++; });
      // The value before a final period the paste left out (see forward), or the last item: the message's last.
      var dropped = period && cut === null && before === rowsShown && k === items.length - 2 && items[items.length - 1] === ".";
      var last = k === items.length - 1 || dropped;
      var a, b, whole = true;
      if (before === 0) { a = start; b = firstAt; }
      else if (before < rowsShown) { a = paste.after(spans[before - 1][1] - 1); b = paste.at(spans[before][0]); }
      else if (before > rowsShown || (cut !== null && lastSpan[1] >= cut)) break;
      else if (cut !== null) { a = lastEnd; b = paste.at(cut); whole = false; }
      else if (last) { a = lastEnd; b = end = Math.max(end, tailEnd(text, a, start)); }
      else break;
      var kind = item.groups.length === 1 && kinds.length ? kinds[item.groups[0]] : null;
      var value = stripped(text.slice(a, b));
      if (kind !== null && whole && last && before === rowsShown) {
        var shownValue = fitting(kind, value); // (the message may end before its line does)
        if (shownValue === null) return null;
        if (shownValue !== value) {
          b = end = text.indexOf(shownValue, a) + shownValue.length;
          value = shownValue;
        }
      } else if (kind !== null && before === 0) {
        var startValue = fittingEnd(kind, value); // (the message may start after its line's text does)
        if (startValue === null) return null;
        if (startValue !== value) {
          a = start = text.lastIndexOf(startValue, b - startValue.length);
          value = startValue;
          got = this.shownClass(text, start, index);
          if (!got[0]) return null;
          shown = got[1];
        }
      }
      var hole = [bisectLeft(paste.where, a), bisectLeft(paste.where, b)];
      holes.push(hole);
      for (var c = 0; whole && c < paste.cuts.length - 1; c++) if (hole[0] <= paste.cuts[c] && paste.cuts[c] < hole[1]) whole = false;
      if (dropped && !whole) return null; // (a last value cut at `...` is a cut, not a final period left out)
      value = quoted ? unescaped(value) : value;
      if (whole && kind !== null && !fitsKind(kind, value)) return null; // a value its placeholder cannot print
      if (before > 0 && before < rows.length && loose(kind, program, k) && SENTENCE.test(value)) {
        inside = true;
        if (dropped) return null; // (nor a last value whose final period was left out: the text goes on)
      }
      values.push([item.groups, value]);
    }
    if (cut !== null) end = Math.max(end, paste.at(cut));
    else if (shown === null && rows[rows.length - 1] === items.length - 1 && !period) {
      inside = inside || goesOnAfter(text, end, program.texts[rows[rows.length - 1]]);
    }
    var literal = -C.TYPO_COST * typo, info = 0;
    spans.forEach(function (span) { literal += span[1] - span[0]; });
    for (var n = 0; n < Math.min(rows.length, spans.length); n++) {
      var whole = cut === null || n < spans.length - 1 || openEnd;
      var words = program.words[rows[n]];
      for (var w = 0; w < words.length; w++) if (whole || words[w][0] <= spans[n][1] - spans[n][0]) info += words[w][1];
    }
    var verbatim = true;
    for (var e = 0; verbatim && e < Math.min(rows.length, spans.length); e++) {
      var span = spans[e];
      if (span[1] > span[0]) verbatim = same(text.slice(paste.at(span[0]), paste.after(span[1] - 1)), program.texts[rows[e]]);
    }
    var exact = !paste.steps.length && !period && !typo && verbatim;
    var spaced = verbatim;
    for (var g = 0; spaced && g < Math.min(rows.length, spans.length); g++) {
      var piece = spans[g];
      if (piece[1] > piece[0]) {
        spaced = spacedText(text.slice(paste.at(piece[0]), paste.after(piece[1] - 1))) ===
          spacedText(program.texts[rows[g]].replace(/^[ \t\n`]+|[ \t\n`]+$/g, ""));
      }
    }
    return newHit(index, number, spans.slice(), start, end, values, holes, literal, info, {
      cut: cut !== null, period: period, exact: exact, shownClass: shown, typo: typo > 0, openEnd: openEnd,
      agrees: shown === self.classes[index], verbatim: verbatim, spaced: spaced, inside: inside,
    });
  };

  // kinds.py's fits (fitsKind) and fitting: whether a placeholder of a kind ([shape, none, choices]) can print a value
  function fitsKind(kind, value) {
    var shape = kind[0];
    if (shape === "any" || (value === "None" && (kind[1] || C.NONE_TOO.indexOf(shape) >= 0))) return true;
    if (shape === "choice") return kind[2].indexOf(value) >= 0;
    return KIND[shape].test(value);
  }

  function fitting(kind, value) {
    if (kind[0] === "any" || fitsKind(kind, value)) return value;
    var ends = [];
    for (var at = 0; at < value.length; at++) {
      if (C.KIND_STOPS.indexOf(value[at]) >= 0) {
        ends.push(at);
        if (ends.length === C.MAX_ENDS) break;
      }
    }
    for (var e = ends.length - 1; e >= 0; e--) {
      if (ends[e] && fitsKind(kind, value.slice(0, ends[e]))) return value.slice(0, ends[e]);
    }
    return null;
  }

  function fittingEnd(kind, value) {
    if (kind[0] === "any" || fitsKind(kind, value)) return value;
    var starts = [];
    for (var at = value.length - 1; at >= 0; at--) {
      if (C.KIND_STOPS.indexOf(value[at]) >= 0) {
        starts.push(at + 1);
        if (starts.length === C.MAX_ENDS) break;
      }
    }
    for (var e = starts.length - 1; e >= 0; e--) {
      if (starts[e] < value.length && fitsKind(kind, value.slice(starts[e]))) return value.slice(starts[e]);
    }
    return null;
  }

  function loose(kind, program, k) { // locate.py's _loose
    if (kind !== null && kind[0] !== "any") return false;
    var before = k > 0 ? program.texts[k - 1].replace(TRAILING_SPACE, "") : "";
    return !(before && "'\"`".indexOf(before[before.length - 1]) >= 0);
  }

  function goesOnBefore(text, start) { // locate.py's _goes_on_before
    var c = text[start];
    if (c !== undefined && c >= "A" && c <= "Z") return false;
    var line = rfindIn(text, "\n", 0, start) + 1;
    var before = text.slice(line, start).replace(/[ \t]+$/, "");
    return before.length > 0 && isWord(before[before.length - 1]);
  }

  function goesOnAfter(text, end, written) { // locate.py's _goes_on_after
    var trimmed = written.replace(TRAILING_SPACE, "");
    if (!trimmed || !isWord(trimmed[trimmed.length - 1])) return false;
    var after = text.slice(end, lineEnd(text, end)).replace(/^[ \t]+/, "");
    return after.length > 0 && isWord(after[0]);
  }

  function newHit(template, program, spans, start, end, values, holes, literal, info, flags) {
    return {
      template: template, program: program, spans: spans, start: start, end: end, values: values, holes: holes,
      literal: literal, info: info, cut: !!flags.cut, period: !!flags.period, exact: flags.exact === undefined ? true : flags.exact,
      typo: !!flags.typo, agrees: !!flags.agrees, openEnd: !!flags.openEnd, verbatim: !!flags.verbatim,
      spaced: !!flags.spaced,
      shownClass: flags.shownClass === undefined ? null : flags.shownClass, confident: false, bits: 0, demoted: false,
      inside: !!flags.inside,
    };
  }

  function clear(paste, at, row) {
    if (paste.cuts.length === 1 || row.indexOf("...") >= 0) return true;
    var end = at + row.length;
    for (var c = 0; c < paste.cuts.length - 1; c++) if (paste.cuts[c] < end && at < paste.cuts[c] + 3) return false;
    return true;
  }

  function same(shown, written) {
    return shown.replace(RE.spaces, "").replace(/"/g, "'") ===
      written.replace(RE.spaces, "").replace(/^`+|`+$/g, "").replace(/"/g, "'");
  }

  function spacedText(text) { return text.replace(RE.spaces, " ").replace(/"/g, "'"); }

  function breaks(text, start, end) {
    if (findIn(text, "\n\n", start, end) >= 0) return true;
    return C.TAIL_STOPS.some(function (stop) { return findIn(text, stop, start, end) >= 0; });
  }

  function startsWord(paste, at, row, spaced, free) {
    if (!spaced && (free || !isWord(row[0]))) return true;
    var before = paste.at(at) - 1;
    return before < 0 || !isWord(paste.text[before]);
  }

  function endsWord(paste, end, row, spaced, free) {
    if (!row || (!spaced && (free || !isWord(row[row.length - 1])))) return true;
    var after = paste.after(end - 1);
    return after >= paste.text.length || !isWord(paste.text[after]);
  }

  function endsMessage(paste, stop) {
    var after = paste.text.slice(paste.after(stop - 1)).replace(/^[ \t]+/, "");
    return !after || !isWord(after[0]);
  }

  function endsQuote(paste, stop, start) {
    if (isWord(start[start.length - 1]) && !endsWord(paste, stop, start, false, false)) return false;
    var after = paste.text.slice(paste.after(stop - 1)).replace(/^[ \t]+/, "");
    if (start[start.length - 1] !== ".") return after.length > 0 && C.CLOSERS_NO_PERIOD.indexOf(after[0]) >= 0;
    return stripped(after) === "" || C.CLOSERS.indexOf(after[0]) >= 0 || after.indexOf("\n\n") === 0;
  }

  function fits(paste, span, program, k, ends) {
    var row = program.items[k], text = program.texts[k];
    if (!clear(paste, span[0], row)) return false;
    if (!startsWord(paste, span[0], row, isSpace(text[0]), k > 0)) return false;
    return ends ? endsWord(paste, span[1], row, false, false) : endsWord(paste, span[1], row, isSpace(text[text.length - 1]), true);
  }

  function inClassPrefix(text, position) {
    var line = text.lastIndexOf("\n", position - 1) + 1;
    if (position === 0) line = 0;
    var slice = text.slice(line, position + 2), re = new RegExp(C.CLASS_AT, "g"), m;
    while ((m = re.exec(slice)) !== null) {
      if (line + m.index < position && position < line + m.index + m[0].length) return true;
      if (m[0] === "") re.lastIndex++;
    }
    return false;
  }

  function leadStart(text, first) {
    var line = first > 0 ? text.lastIndexOf("\n", first - 1) + 1 : 0;
    var best = line;
    C.LEAD_STOPS.forEach(function (stop) {
      var at = rfindIn(text, stop, line, first);
      if (at >= 0) best = Math.max(best, at + stop.length);
    });
    var slice = text.slice(line, first), re = new RegExp(C.CLASS_AT, "g"), m, found = line;
    while ((m = re.exec(slice)) !== null) { found = line + m.index + m[0].length; if (m[0] === "") re.lastIndex++; }
    return Math.max(best, found);
  }

  function mayPrint(builtinBases, recordClass, shown) {
    if (recordClass === shown) return true;
    return !has.call(builtinBases, recordClass) || builtinBases[recordClass].indexOf(shown) >= 0;
  }

  function classBefore(text, start) {
    var m = RE.classBefore.exec(text.slice(back(text, start, C.CLASS_WINDOW), start));
    return m ? last(m[1]) : null;
  }

  // locate.py's _shown_class: [whether template `index` may print the message at `start`, the class shown].
  Finder.prototype.shownClass = function (text, start, index) {
    var shown = classBefore(text, start);
    if (shown === null || mayPrint(this.builtinBases, this.classes[index], shown)) return [true, shown];
    return [rewrapped(text, start), null];
  };

  function rewrapped(text, start) { // locate.py's _rewrapped
    var line = start > 0 ? text.lastIndexOf("\n", start - 1) : -1;
    if (line < 0) return false;
    var before = line > 0 ? text.lastIndexOf("\n", line - 1) + 1 : 0;
    return RE.rewrap.test(text.slice(before, line));
  }

  function tailEnd(text, position, start) {
    var end = lineEnd(text, position);
    C.TAIL_STOPS.forEach(function (stop) {
      var at = findIn(text, stop, position, end + stop.length);
      if (at >= 0) end = Math.min(end, at);
    });
    var before = start > 0 ? text[start - 1] : "";
    if (has.call(C.OPENERS, before)) {
      var at = rfindIn(text, C.OPENERS[before], position, end);
      if (at >= 0) end = at;
    }
    return end;
  }

  function lineEnd(text, position) {
    var end = text.indexOf("\n", position);
    return end < 0 ? text.length : end;
  }

  function better(hit, other) {
    var a = [hit.literal, !hit.cut ? 1 : 0, hit.info, -hit.start], b = [other.literal, !other.cut ? 1 : 0, other.info, -other.start];
    for (var i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i];
    return false;
  }

  function inside(hit, other) {
    if (!hit.spans.length) return false;
    return other.holes.some(function (h) { return h[0] <= hit.spans[0][0] && hit.spans[hit.spans.length - 1][1] <= h[1]; });
  }

  function tier(hit) { return hit.cut ? 3 : hit.typo ? 2 : hit.period ? 1 : 0; }

  // score.py's refute: another explanation takes the hit's place at least as well.
  function refute(hit) {
    hit.bits = Math.min(hit.bits, 0);
    hit.confident = false;
  }

  function demote(hits) {
    hits.forEach(function (hit) {
      for (var i = 0; i < hits.length; i++) {
        var other = hits[i];
        if (other === hit || !other.spans.length) continue;
        if (tier(other) < tier(hit) && other.literal >= hit.literal && hit.start < other.end && other.start < hit.end) {
          hit.demoted = true;
          break;
        }
        if (other.literal <= hit.literal) continue;
        if (inside(other, hit)) continue;
        if (!inside(hit, other) && hit.spans.length && other.spans[0][0] <= hit.spans[0][0] &&
            hit.spans[hit.spans.length - 1][1] <= other.spans[other.spans.length - 1][1]) {
          hit.demoted = true;
          break;
        }
        var overlaps = hit.holes.some(function (h) {
          return other.spans.some(function (span) { return h[0] < span[1] && span[0] < h[1]; });
        });
        if (overlaps) { hit.demoted = true; break; }
      }
    });
  }

  function compare(a, b) {
    for (var i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
  }

  function ranked(hits) {
    var shown = hits.filter(function (h) { return h.confident; });
    function place(hit) {
      for (var i = 0; i < shown.length; i++) if (shown[i] !== hit && inside(hit, shown[i])) return [shown[i].start, 0];
      return [hit.start, 1];
    }
    function key(h) {
      var p = place(h);
      return [tier(h), p[0], p[1], h.start, h.agrees ? 0 : 1, h.verbatim ? 0 : 1, h.spaced ? 0 : 1, -h.literal, -h.info,
        h.template];
    }
    var confident = shown.map(function (h) { return [key(h), h]; }).sort(function (a, b) { return compare(a[0], b[0]); })
      .map(function (pair) { return pair[1]; });
    var weak = hits.filter(function (h) { return !h.confident && !(h.cut && h.literal < C.MIN_LIT); })
      .map(function (h) { return [[-h.literal, -h.info, h.start, h.template], h]; })
      .sort(function (a, b) { return compare(a[0], b[0]); }).map(function (pair) { return pair[1]; });
    return confident.concat(weak.slice(0, C.MAX_WEAK));
  }

  // ----------------------------------------------------------------------------------------------- answer

  // One input as find.py's Finder.answer answers it (what `match` answers, a pasted `raise` line aside):
  // {paste, confident: [hits], weak: [hits], elsewhere: [hits of background messages]}.
  Finder.prototype.answer = function (text) {
    var line = lineBreaksOff(text), input = head(line, C.MAX_LINE);
    var paste = this.paste(input, true);
    var got = this.answers(paste);
    if (!got.confident.length && paste.steps.indexOf("html") >= 0) {
      var typed = this.paste(input, false), more = this.answers(typed);
      if (more.confident.length || !got.weak.length) { paste = typed; got = more; }
    }
    if (!got.confident.length && text.length > C.MAX_LINE && length(text) > C.MAX_LINE) {
      var end = this.paste(tail(line, C.MAX_LINE), true), again = this.answers(end);
      if (again.confident.length) { paste = end; got = { confident: again.confident, weak: [], elsewhere: again.elsewhere }; }
    }
    return { paste: paste, confident: got.confident, weak: got.weak, elsewhere: got.elsewhere };
  };

  // find.py's _answers: the catalog's hits (numbered below `own`), and the background's that explain the paste
  // with confidence or a place of a catalog's hit at least as well (which makes that one weak).
  Finder.prototype.answers = function (paste) {
    var hits = this.find(paste), own = this.own, libraries = this.libraries;
    var mine = hits.filter(function (h) { return h.template < own; });
    var theirs = hits.filter(function (h) { return h.template >= own; });
    // A traceback whose innermost frame before a message is a library's: the message is that library's.
    var packages = this.packages, stack = frames(paste.text, libraries, packages);
    mine.forEach(function (h) {
      var who = raiser(stack, h.start);
      if (who !== null && packages.indexOf(who) < 0) refute(h);
    });
    theirs = theirs.filter(function (b) {
      var who = raiser(stack, b.start);
      return who === null || who === libraries[b.template - own];
    });
    var elsewhere = theirs.filter(function (b) {
      return b.confident || mine.some(function (h) { return explains(b, h); });
    });
    mine.forEach(function (h) {
      if (theirs.some(function (b) { return explains(b, h); })) refute(h);
    });
    var confident = mine.filter(function (h) { return h.confident; });
    return confident.length ? { confident: confident, weak: [], elsewhere: elsewhere }
      : { confident: [], weak: mine, elsewhere: elsewhere };
  };

  function frames(text, libraries, packages) { // find.py's _frames
    var frame = new RegExp(C.FRAME, "g"), out = [], m;
    while ((m = frame.exec(text)) !== null) {
      var folders = m[1].split("\\").join("/").split("/"), who = null, installed = -1, named;
      folders.pop();
      folders.forEach(function (folder, k) { if (folder === "site-packages" || folder === "dist-packages") installed = k; });
      named = installed >= 0 ? folders.slice(installed + 1, installed + 2) : folders.slice().reverse();
      for (var k = 0; k < named.length && who === null; k++) {
        var name = named[k];
        if (packages.indexOf(name) >= 0 || (libraries.indexOf(name) >= 0 && name !== "python" && name !== "argparse")) who = name;
      }
      out.push([m.index + m[0].length - m[2].length, who]);
    }
    return out;
  }

  function raiser(stack, position) { // find.py's _raiser
    var library = null;
    for (var k = 0; k < stack.length && stack[k][0] <= position; k++) library = stack[k][1];
    return library;
  }

  function explains(theirs, hit) { // find.py's _explains
    if (theirs.inside || tier(theirs) > tier(hit)) return false;
    if (hit.verbatim && !theirs.verbatim) return false;
    return theirs.start < hit.end && hit.start < theirs.end && theirs.literal >= hit.literal;
  }

  root.ExtractorFinder = Finder;
  if (typeof module === "object" && module.exports) module.exports = Finder;
})(typeof window === "object" ? window : this);
