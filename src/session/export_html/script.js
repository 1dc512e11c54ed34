// pi-engine's session export: conveniences only (the transcript is in the HTML).
// A click on a node of the tree shows that node's branch: its path from the root, continued
// to the newest leaf below it. Reads ids from data attributes; never writes HTML.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  var parentOf = Object.create(null);
  var lastChild = Object.create(null);
  var treeLink = Object.create(null);
  var links = document.querySelectorAll("#tree a[data-id]");
  var leaf = null;
  for (var i = 0; i < links.length; i++) {
    var a = links[i];
    var id = a.getAttribute("data-id");
    var parent = a.getAttribute("data-parent");
    treeLink[id] = a;
    if (parent !== null) {
      parentOf[id] = parent;
      // The tree is in depth-first order, children oldest first: the last seen is newest.
      lastChild[parent] = id;
    }
    if (a.parentNode.classList.contains("leaf")) leaf = id;
  }

  function entry(id) {
    return document.getElementById("e-" + id);
  }

  // The ids of the branch through `id`: down to the newest leaf, then up to the root.
  function branch(id) {
    var seen = Object.create(null);
    var end = id;
    while (lastChild[end] !== undefined && !seen[end]) {
      seen[end] = true;
      end = lastChild[end];
    }
    var onPath = Object.create(null);
    for (var cur = end; cur !== undefined && !onPath[cur]; cur = parentOf[cur]) {
      onPath[cur] = true;
    }
    return onPath;
  }

  function mark(el, on) {
    if (!el) return;
    el.classList.toggle("on-path", on);
    el.classList.toggle("off-path", !on);
  }

  var selected = null;
  function show(id, scroll) {
    var onPath = branch(id);
    for (var key in treeLink) {
      var on = onPath[key] === true;
      mark(entry(key), on);
      mark(treeLink[key].parentNode, on);
    }
    if (selected) selected.classList.remove("selected");
    selected = treeLink[id] ? treeLink[id].parentNode : null;
    if (selected) selected.classList.add("selected");
    if (scroll) {
      var target = document.getElementById(treeLink[id].getAttribute("href").slice(1)) || entry(id);
      if (target && target.scrollIntoView) target.scrollIntoView({ block: "start" });
    }
  }

  document.getElementById("tree").addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a[data-id]") : null;
    if (!a) return;
    ev.preventDefault();
    show(a.getAttribute("data-id"), true);
    try {
      history.replaceState(null, "", a.getAttribute("href"));
    } catch (e) {
      // Some browsers refuse history changes on file: pages; the view has changed anyway.
    }
  });

  var back = document.getElementById("to-leaf");
  if (back && leaf !== null) {
    back.addEventListener("click", function () {
      show(leaf, true);
    });
  }

  // A link to an entry of another branch shows that branch.
  if (location.hash.indexOf("#e-") === 0) {
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    var article = target && target.closest ? target.closest("article[data-id]") : null;
    if (article && article.classList.contains("off-path")) {
      show(article.getAttribute("data-id"), true);
    }
  }
})();
