"""The browser's rules for reading a page, which the core's :mod:`minicrawl.core.links` and
:mod:`minicrawl.core.urls` lean on (they import this package; it imports nothing of run.py's):

* :mod:`~minicrawl.html.encoding`: which encoding a page is in, decided as a browser decides
  it, and a link's query percent-encoded in it;
* :mod:`~minicrawl.html.whatwg`: the Encoding Standard's decoders and encoders, Python's codecs
  mended where they differ from its indexes;
* :mod:`~minicrawl.html.meta`: what a ``<meta>`` or a header says besides links — a refresh, a
  word to robots;
* :mod:`~minicrawl.html.walk`: the parse and the walk of a page's elements that can be links;
* :mod:`~minicrawl.html.edges`: when a crawl asks (``--links``), the same walk also records
  every link as written — element, attribute, text, line — and the page's requisites;
* :mod:`~minicrawl.html.facts`: when a crawl asks (run.py's ``--out``), the same walk's reader
  also reads what the page says of itself: title, description, canonical, language, words;
* :mod:`~minicrawl.html.mime`: whether a page of no named type is HTML, as browsers sniff it.
"""
