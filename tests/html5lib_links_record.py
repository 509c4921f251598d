"""Make tests/data/html5lib/links.json: the links a browser finds in the html5lib
tree-construction documents that hold links (tests/data/html5lib/README.md says how).

Not run by the test suite (it needs html5lib, the HTML standard's parser in Python, as the
oracle); run by hand after changing the vendored files:

    pip install html5lib
    python tests/html5lib_links_record.py

A document is kept only if html5lib builds the tree its ``#document`` says (html5lib 1.1 predates
some of the standard's changes: those are left out, counted) and the start tags given a link
leave that tree as it was but for them. Scripting off (a crawler runs no script): documents
marked ``#script-on`` are left out; fragments too.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from xml.dom.minidom import Node

import html5lib
from html5lib import treebuilders

DATA = Path(__file__).parent / "data" / "html5lib"
NS = {"http://www.w3.org/1999/xhtml": "", "http://www.w3.org/2000/svg": "svg ",
      "http://www.w3.org/1998/Math/MathML": "math "}
INJECT = re.compile(r"<(a|area|frame|iframe)(?=[\t\n\f\r />])", re.I)
HTMLNS = "http://www.w3.org/1999/xhtml"
SVGNS = "http://www.w3.org/2000/svg"
XLINK = "http://www.w3.org/1999/xlink"
LINK_RELS = {"next", "prev", "alternate", "canonical"}  # the <link>s a crawler follows
HAS_LINK = re.compile(r"\| *<(a|area|frame|iframe|link|svg a)>")


SECTIONS = ("errors", "new-errors", "document", "document-fragment", "script-on", "script-off")
XML_NS = {"http://www.w3.org/1999/xlink": "xlink", "http://www.w3.org/XML/1998/namespace": "xml",
          "http://www.w3.org/2000/xmlns/": "xmlns"}


def read_dat(path: Path) -> list[dict]:
    """The tests of a ``.dat`` file: data, document (its lines), fragment?, script on/off."""
    tests: list[dict[str, list[str]]] = []
    test: dict[str, list[str]] | None = None
    key = ""
    for line in path.read_text("utf-8").split("\n"):
        ended = test is None or key == "document" and (not test["document"]
                                                      or test["document"][-1] == "")
        if line.startswith("#data") and ended:
            test, key = {"data": []}, "data"
            tests.append(test)
        elif test is not None and line.startswith("#") and line[1:].strip() in SECTIONS:
            key = line[1:].strip()
            test.setdefault(key, [])
        elif test is not None:
            test[key].append(line)
    out = []
    for test in tests:
        document = test.get("document", [])
        while document and document[-1] == "":
            document.pop()
        out.append({"data": "\n".join(test["data"]), "document": document,
                    "fragment": "document-fragment" in test,
                    "script": "on" if "script-on" in test else
                              "off" if "script-off" in test else None})
    return out


def dump(doc: Node) -> list[str]:
    """html5lib's DOM as a ``#document`` is written (text nodes joined)."""
    lines: list[str] = []

    def walk(node: Node, indent: int) -> None:
        pad = "| " + "  " * indent
        if node.nodeType == node.DOCUMENT_TYPE_NODE:
            ids = f' "{node.publicId or ""}" "{node.systemId or ""}"' \
                if node.publicId or node.systemId else ""
            lines.append(f"{pad}<!DOCTYPE {node.name}{ids}>")
        elif node.nodeType == node.COMMENT_NODE:
            lines.append(f"{pad}<!-- {node.data} -->")
        elif node.nodeType == node.TEXT_NODE:
            lines.append(f'{pad}"{node.data}"')
        elif node.nodeType == node.ELEMENT_NODE:
            ns = node.namespaceURI or HTMLNS
            lines.append(f"{pad}<{NS.get(ns, ns + ' ')}{node.localName}>")
            attributes = []
            for i in range(node.attributes.length):
                at = node.attributes.item(i)
                name = at.localName or at.name
                if at.namespaceURI in XML_NS:
                    name = f"{XML_NS[at.namespaceURI]} {at.localName}"
                attributes.append((name, at.value))
            lines.extend(f'{pad}  {name}="{value}"' for name, value in sorted(attributes))
            inner = indent + 1
            if node.localName == "template" and ns == HTMLNS:
                lines.append(f"{pad}  content")
                inner += 1
            for child in node.childNodes:
                walk(child, inner)

    doc.normalize()
    for child in doc.childNodes:
        walk(child, 0)
    return lines


def inject(data: str) -> tuple[str, int]:
    """``data`` with each ``<a``, ``<area``, ``<frame``, ``<iframe`` given a first attribute
    ``href="/hN"`` (``src`` for frames; the first of two attributes of a name wins); how many."""
    given = 0

    def give(match: re.Match[str]) -> str:
        nonlocal given
        given += 1
        attr = "src" if match[1].lower() in ("frame", "iframe") else "href"
        return f'<{match[1]} {attr}="/h{given}"'
    return INJECT.sub(give, data), given


def spec_links(doc: Node) -> set[str]:
    """The links a browser finds in the tree: an HTML ``<a>``/``<area>`` href, an
    ``<iframe>``'s src, a ``<frame>``'s in a frameset (none in a body), a ``<link>`` with a
    rel a crawler follows, an SVG ``<a>``'s href (or xlink:href); none in a ``<template>``."""
    found: set[str] = set()

    def walk(node: Node, above: list[str]) -> None:
        if node.nodeType != node.ELEMENT_NODE:
            return
        ns, tag = node.namespaceURI or HTMLNS, node.localName
        if ns == HTMLNS and tag == "template":
            return
        get, has = node.getAttribute, node.hasAttribute
        if ns == HTMLNS:
            if tag in ("a", "area") and has("href"):
                found.add(get("href"))
            elif tag == "iframe" and has("src"):
                found.add(get("src"))
            elif tag == "frame" and has("src") and "frameset" in above and "body" not in above:
                found.add(get("src"))
            elif tag == "link" and set(get("rel").lower().split()) & LINK_RELS and has("href"):
                found.add(get("href"))
        elif ns == SVGNS and tag == "a":
            if has("href"):
                found.add(get("href"))
            elif node.hasAttributeNS(XLINK, "href"):
                found.add(node.getAttributeNS(XLINK, "href"))
        for child in node.childNodes:
            walk(child, [*above, tag if ns == HTMLNS else f"{ns}:{tag}"])

    walk(doc.documentElement, [])
    return found

def main() -> None:
    parser = html5lib.HTMLParser(tree=treebuilders.getTreeBuilder("dom"),
                                 namespaceHTMLElements=True)
    cases, skipped = [], {"html5lib builds another tree": 0, "a link changes the tree": 0}
    for path in sorted(DATA.glob("*.dat")):
        for index, test in enumerate(read_dat(path)):
            if test["fragment"] or test["script"] == "on":
                continue
            if not any(HAS_LINK.match(line) for line in test["document"]):
                continue
            if dump(parser.parse(test["data"])) != test["document"]:
                skipped["html5lib builds another tree"] += 1
                continue
            data, given = inject(test["data"])
            doc = parser.parse(data)
            tree = [line for line in dump(doc) if not re.fullmatch(r'\| *(href|src)="/h\d+"', line)]
            if tree != test["document"] or not given:
                skipped["a link changes the tree"] += 1
                continue
            cases.append({"file": path.name, "index": index, "data": data,
                          "links": sorted(spec_links(doc))})
    (DATA / "links.json").write_text(json.dumps({"skipped": skipped, "cases": cases}, indent=1,
                                                ensure_ascii=False) + "\n", "utf-8")
    print(f"{len(cases)} documents with links; left out: {skipped}", file=sys.stderr)


if __name__ == "__main__":
    main()
