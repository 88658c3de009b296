// A record page opened from the index's answer to a paste: the values the paste showed come in the address's
// fragment (#p0=64&p1=128, by placeholder index; never sent to a server), and are shown in the message in
// place of the placeholders they fill, marked as the index marks them, and beside each value it reports.
(function () {
  "use strict";
  var values = new URLSearchParams(location.hash.slice(1));
  var filled = 0;
  document.querySelectorAll("pre.message mark.ph[data-p]").forEach(function (mark) {
    var value = values.get("p" + mark.dataset.p);
    if (value === null) return;
    mark.title = mark.textContent; // the placeholder, on hover
    mark.textContent = value;
    filled++;
  });
  document.querySelectorAll(".values li[data-p]").forEach(function (item) {
    var value = values.get("p" + item.dataset.p);
    if (value === null) return;
    var mark = document.createElement("mark");
    mark.className = "ph";
    mark.textContent = value;
    item.append(" = ", mark);
  });
  if (filled) {
    document.getElementById("template-note").hidden = true;
    document.getElementById("pasted-note").hidden = false;
  }
})();
