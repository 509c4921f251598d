"""Turn Google's ``robots_test.cc`` (vendored beside this script) into ``cases.json``.

Run from anywhere: ``python tests/data/robotstxt/translate.py``; it rewrites ``cases.json``
beside it. The .cc is read, not copied by hand: string literals, the variables they are put in
(with C++ block scope), ``absl::StrCat`` / ``absl::StrAppend`` and every
``EXPECT_TRUE/FALSE(IsUserAgentAllowed(robotstxt, agent, url))`` are interpreted, so a new
upstream version is translated again by running this script. Three kinds of case come out:

* ``allowed``: one EXPECT on ``IsUserAgentAllowed``: the robots.txt body (bytes, kept as
  latin-1 text so that a BOM and broken UTF-8 survive JSON), the user agent (the product token
  to match, as Google's matcher takes it), the URL and whether it is allowed.
* ``sitemaps``: ``ID_NonStandardLineExample_Sitemap``'s body and the sitemap URL it must give.
* ``token``: ``IsValidUserAgentToObey``: whether a string is a product token a crawler may use.

Tests that check the parser's counters (line endings, the BOM) or its internal helpers
(``GetPathParamsQuery``, ``MaybeEscapePattern``) assert nothing a crawler can observe directly;
each is *derived* into ``allowed`` cases with the same bodies, marked ``"derived": true`` with a
note saying how (e.g. an ``Allow`` made a ``Disallow`` so that reading the line shows in a
verdict). ``GoogleOnly_LineTooLong`` builds its lines in a loop; that loop is reproduced here.

Each case says ``"rfc": true`` for RFC 9309 behaviour and ``false`` for Google's own extensions:
tests named ``GoogleOnly_*`` upstream, and the lines inside an ``ID_*`` test that its own comment
calls Google-specific (a missing colon, ``GOOGLE_ONLY`` below). One ``GoogleOnly_*`` test holds
no extension at all (``RFC_ALL_THE_SAME``: Google's documentation examples of path matching,
each plain RFC 9309 matching) and counts as RFC.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "robots_test.cc"
OUT = HERE / "cases.json"

# C++ string literal (with the escapes the file uses), identifiers, punctuation.
TOKEN = re.compile(r'''"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_:]*|\d+|//[^\n]*|\S''')
ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'"}

# Tests whose loops the interpreter does not follow: translated by hand below.
BY_HAND = {"GoogleOnly_LineTooLong"}

# GoogleOnly_* tests that hold no Google extension: Google's documentation examples of path
# matching, every one RFC 9309 2.2.2 (longest match, allow on a tie) and 2.2.3 ('*', '$').
RFC_ALL_THE_SAME = {
    "GoogleOnly_DocumentationChecks":
        "Google's documentation examples: RFC 9309 2.2.2-2.2.3 matching, no extension",
}

# Bodies inside ID_* tests that the test's own comment calls Google-specific.
GOOGLE_ONLY = {
    ("ID_LineSyntax_Line", "robotstxt_incorrect_accepted"):
        "a missing colon ('disallow /') is accepted (Google-specific, says the test)",
}


def unescape(literal: str) -> str:
    """A C string literal's bytes (its characters UTF-8 encoded, as the compiler does, and its
    escapes), as latin-1 text: one char per byte."""
    out, i, body = bytearray(), 0, literal[1:-1]
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif body[i + 1] == "x":
            digits = re.match(r"[0-9A-Fa-f]+", body[i + 2:]).group(0)
            out.append(int(digits, 16))
            i += 2 + len(digits)
        else:
            out += ESCAPES[body[i + 1]].encode()
            i += 2
    return out.decode("latin-1")


def utf8(latin1: str) -> str:
    """A URL or user agent (all are UTF-8 in the file) as text."""
    return latin1.encode("latin-1").decode("utf-8")


class Interpreter:
    """Just enough C++ to follow the test file: scopes, string values, the EXPECTs."""

    def __init__(self, text: str) -> None:
        self.tokens = [t for t in TOKEN.findall(text) if not t.startswith("//")]
        self.pos = 0
        self.scopes: list[dict[str, str]] = [{}]
        self.test = ""
        self.cases: list[dict] = []
        self.tests_seen: list[str] = []

    def peek(self, k: int = 0) -> str:
        return self.tokens[self.pos + k] if self.pos + k < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        tok = self.tokens[self.pos]
        if expected is not None and tok != expected:
            raise SyntaxError(f"expected {expected!r}, got {tok!r} near token {self.pos}")
        self.pos += 1
        return tok

    def lookup(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise KeyError(name)

    def assign(self, name: str, value: str) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = value
                return
        raise KeyError(name)

    def expr(self) -> str | None:
        """A string expression: adjacent literals, a variable, absl::StrCat(...); None if the
        expression is not a string (the caller skips it)."""
        tok = self.peek()
        if tok.startswith('"'):
            value = ""
            while self.peek().startswith('"'):
                value += unescape(self.take())
            return value
        if tok == "absl::StrCat":
            self.take()
            self.take("(")
            parts = [self.expr()]
            while self.peek() == ",":
                self.take()
                parts.append(self.expr())
            self.take(")")
            return "".join(parts)
        if re.fullmatch(r"[A-Za-z_]\w*", tok):
            try:
                value = self.lookup(tok)
            except KeyError:
                return None
            self.take()
            return value
        return None

    def skip_statement(self) -> None:
        depth = 0
        while True:
            tok = self.take()
            if tok in "({[":
                depth += 1
            elif tok in ")}]":
                depth -= 1
            elif tok == ";" and depth == 0:
                return

    def run(self) -> list[dict]:
        while self.pos < len(self.tokens):
            tok = self.peek()
            if tok == "TEST":
                self.take()
                self.take("(")
                self.take()
                self.take(",")
                self.test = self.take()
                self.tests_seen.append(self.test)
                self.take(")")
            elif tok == "{":
                self.take()
                self.scopes.append({})
            elif tok == "}":
                self.take()
                self.scopes.pop()
            elif tok in ("EXPECT_TRUE", "EXPECT_FALSE") and self.peek(2) == "IsUserAgentAllowed":
                self.expect(tok == "EXPECT_TRUE")
            elif tok == "absl::StrAppend":
                self.take()
                self.take("(")
                self.take("&")
                name = self.take()
                parts = []
                while self.peek() == ",":
                    self.take()
                    parts.append(self.expr())
                self.take(")")
                self.take(";")
                self.assign(name, self.lookup(name) + "".join(parts))
            elif self.declaration():
                pass
            else:
                self.take()
        return self.cases

    def declaration(self) -> bool:
        """``[static] [const] (absl::string_view|std::string|char) NAME [[]] = expr;``"""
        start = self.pos
        while self.peek() in ("static", "const"):
            self.take()
        if self.peek() not in ("absl::string_view", "std::string", "char"):
            self.pos = start
            return False
        self.take()
        name = self.take()
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            self.pos = start
            return False
        if self.peek() == "[":
            self.take("[")
            self.take("]")
        if self.peek() == ";":  # std::string robotstxt; (built by StrAppend)
            self.take()
            self.scopes[-1][name] = ""
            return True
        if self.peek() != "=":
            self.pos = start
            return False
        self.take("=")
        value = self.expr()
        if value is None or self.peek() != ";":
            self.skip_statement()
            return True
        self.take(";")
        self.scopes[-1][name] = value
        return True

    def expect(self, allowed: bool) -> None:
        self.take()
        self.take("(")
        self.take("IsUserAgentAllowed")
        self.take("(")
        body_name = self.peek()
        body = self.expr()
        self.take(",")
        agent = self.expr()
        self.take(",")
        url = self.expr()
        self.take(")")
        self.take(")")
        self.take(";")
        if self.test in BY_HAND:
            return
        if body is None or agent is None or url is None:
            raise SyntaxError(f"cannot evaluate an EXPECT in {self.test}")
        case = {"test": self.test, "robotstxt": body, "agent": utf8(agent), "url": utf8(url),
                "allowed": allowed, "rfc": not self.test.startswith("GoogleOnly_")}
        if self.test in RFC_ALL_THE_SAME:
            case["rfc"], case["note"] = True, RFC_ALL_THE_SAME[self.test]
        note = GOOGLE_ONLY.get((self.test, body_name))
        if note is not None:
            case["rfc"], case["note"] = False, note
        self.cases.append(case)


def line_too_long() -> list[dict]:
    """``GoogleOnly_LineTooLong``: its loops build lines of exactly Google's limit (8 × 2083
    bytes); reproduced as written there."""
    eol, max_line = 1, 2083 * 8
    allow, disallow = "allow: ", "disallow: "
    cases = []
    longline = "/x/"
    max_length = max_line - len(longline) - len(disallow) + eol
    longline += "a" * max(0, max_length - len(longline))
    body = "user-agent: FooBot\n" + disallow + longline + "/qux\n"
    cases.append((body, "http://foo.bar/fux", True))
    cases.append((body, "http://foo.bar" + longline + "/fux", False))
    line_a = line_b = "/x/"
    max_length = max_line - len(line_a) - len(allow) + eol
    line_a += "a" * max(0, max_length - len(line_a))
    line_b += "b" * max(0, max_length - len(line_b))
    body = "user-agent: FooBot\ndisallow: /\n" + allow + line_a + "/qux\n" + allow + line_b \
        + "/qux\n"
    cases.append((body, "http://foo.bar/", False))
    cases.append((body, "http://foo.bar" + line_a + "/qux", True))
    cases.append((body, "http://foo.bar" + line_b + "/fux", True))
    return [{"test": "GoogleOnly_LineTooLong", "robotstxt": b, "agent": "FooBot", "url": u,
             "allowed": a, "rfc": False} for b, u, a in cases]


def derived(bodies: dict[str, str]) -> list[dict]:
    """The parser-counter tests, as verdicts a crawler can observe (see the module doc)."""
    cases = []
    note = ("4 directives on 6 lines whatever the line ending: 'Disallow: /' after two empty "
            "lines is BarBot's rule, so bar may not fetch /")
    for name in ("kUnixFile", "kDosFile", "kMacFile", "kNoFinalNewline", "kMixedFile"):
        body = bodies[name]
        for agent, url, allowed in (("bar", "http://foo.bar/", False),
                                    ("foo", "http://foo.bar/some/path", True),
                                    ("foo", "http://foo.bar/", True)):
            cases.append({"test": "ID_LinesNumbersAreCountedCorrectly", "robotstxt": body,
                          "agent": agent, "url": url, "allowed": allowed, "rfc": True,
                          "derived": True, "note": f"{name}: {note}"})
    bom = {"kUtf8FileFullBOM": (False, "a full BOM is skipped: both lines are read"),
           "kUtf8FilePartial2BOM": (False, "a partial BOM (2 bytes) is skipped too"),
           "kUtf8FilePartial1BOM": (False, "a partial BOM (1 byte) is skipped too"),
           "kUtf8FileBrokenBOM": (True, "a broken BOM spoils the user-agent line: the rule "
                                        "after it is outside any group"),
           "kUtf8BOMSomewhereInMiddleOfFile": (True, "a BOM mid-file spoils the rule's line")}
    for name, (allowed, why) in bom.items():
        body = bodies[name].replace("Allow: /AnyValue", "Disallow: /AnyValue")
        cases.append({"test": "ID_UTF8ByteOrderMarkIsSkipped", "robotstxt": body,
                      "agent": "foo", "url": "http://foo.bar/AnyValue", "allowed": allowed,
                      "rfc": True, "derived": True,
                      "note": f"{name} with its Allow made a Disallow (so that reading the line "
                              f"shows): {why}"})
    # GetPathParamsQuery: what rules are matched against. The absolute URLs of its table, each
    # asked against a rule of exactly the path it must give (a '$'-anchored one), so the path
    # extracted is that and nothing else. The relative forms ('a/b') never reach a crawler.
    paths = [("http://www.example.com", "/"), ("http://www.example.com/", "/"),
             ("http://www.example.com/a", "/a"), ("http://www.example.com/a/", "/a/"),
             ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
             ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f")]
    for url, path in paths:
        cases.append({"test": "TestGetPathParamsQuery", "robotstxt":
                      f"user-agent: FooBot\ndisallow: {path}$\n", "agent": "FooBot",
                      "url": url, "allowed": False, "rfc": True, "derived": True,
                      "note": f"the path matched for {url} is {path} (query in, fragment out)"})
    # MaybeEscapePattern: a rule's non-ASCII octets are %-escaped and its escapes' hex digits
    # upper-cased before matching (RFC 9309 2.2.2; RFC 3986 2.1: %aa and %AA are the same).
    cases.append({"test": "TestMaybeEscapePattern", "robotstxt":
                  "user-agent: FooBot\ndisallow: /á\n".encode().decode("latin-1"),
                  "agent": "FooBot", "url": "http://foo.bar/%C3%A1", "allowed": False,
                  "rfc": True, "derived": True, "note": "'á' in a rule is %C3%A1"})
    cases.append({"test": "TestMaybeEscapePattern", "robotstxt":
                  "user-agent: FooBot\ndisallow: /%aa\n", "agent": "FooBot",
                  "url": "http://foo.bar/%AA", "allowed": False, "rfc": True, "derived": True,
                  "note": "'%aa' in a rule is %AA"})
    return cases


def tokens(text: str) -> list[dict]:
    """``IsValidUserAgentToObey``: (string, valid)."""
    found = re.findall(r'(EXPECT_TRUE|EXPECT_FALSE)\(RobotsMatcher::IsValidUserAgentToObey\('
                       r'("(?:[^"\\]|\\.)*"|absl::string_view\(\))\)\);', text)
    return [{"test": "ID_VerifyValidUserAgentsToObey", "token":
             "" if arg.startswith("absl") else utf8(unescape(arg)),
             "valid": kind == "EXPECT_TRUE", "rfc": True} for kind, arg in found]


def sitemaps(text: str) -> list[dict]:
    """``ID_NonStandardLineExample_Sitemap``: a Sitemap line before or after the groups."""
    groups = "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n"
    loc = "http://foo.bar/sitemap.xml"
    assert f'std::string sitemap_loc = "{loc}";' in text and groups.replace("\n", "\\n") \
        in text.replace('"\n        "', "")
    return [{"test": "ID_NonStandardLineExample_Sitemap", "robotstxt": body,
             "sitemaps": [loc], "rfc": True}
            for body in (groups + f"Sitemap: {loc}\n", f"Sitemap: {loc}\n" + groups)]


def main() -> None:
    source = SOURCE.read_text(encoding="utf-8")
    interpreter = Interpreter(source)
    allowed = interpreter.run()
    bodies = {}
    for scope_dump in re.finditer(r'static const char (k\w+)\[\] =((?:\s*"(?:[^"\\]|\\.)*")+);',
                                  source):
        bodies[scope_dump.group(1)] = "".join(
            unescape(lit) for lit in re.findall(r'"(?:[^"\\]|\\.)*"', scope_dump.group(2)))
    allowed += line_too_long() + derived(bodies)
    sitemap_cases = sitemaps(source)
    # A body is stored once (LineTooLong's are 33 KB each): cases name it by its index.
    bodies_out: list[str] = []
    index: dict[str, int] = {}
    for case in allowed + sitemap_cases:
        body = case.pop("robotstxt")
        if body not in index:
            index[body] = len(bodies_out)
            bodies_out.append(body)
        case["body"] = index[body]
    out = {
        "source": "https://github.com/google/robotstxt/blob/"
                  "22b355ff855419e6a3ff8ff09c0ad7fdb17116f9/robots_test.cc",
        "licence": "Apache-2.0 (LICENSE beside this file)",
        "encoding": "a case's body is bodies[body], a byte string stored as latin-1 text: "
                    ".encode('latin-1') gives the robots.txt bytes",
        "bodies": bodies_out,
        "allowed": allowed,
        "sitemaps": sitemap_cases,
        "tokens": tokens(source),
    }
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    rfc = sum(c["rfc"] for c in allowed)
    print(f"{len(allowed)} allowed cases ({rfc} RFC, {len(allowed) - rfc} Google-only), "
          f"{len(out['sitemaps'])} sitemap cases, {len(out['tokens'])} token cases "
          f"from {len(interpreter.tests_seen)} tests")


if __name__ == "__main__":
    main()
