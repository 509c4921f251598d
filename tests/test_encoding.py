"""encoding: the autodetect step — a page that declares no encoding (no byte order mark, no
charset in its Content-Type, no <meta> the prescan finds) is in the encoding beautifulsoup4's
detector reads in its bytes, as Chromium guesses one, unless that is UTF-8 or a Latin script;
else windows-1252. (Chromium's own answers on such pages, through both crawlers:
tests/test_linkcases.py, the encoding-undeclared-* cases.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minicrawl.core.links import extract_links
from minicrawl.html.encoding import LABELS, guess, lookup, sniff
from tests.linkcases import cases, truth

ROOT = Path(__file__).resolve().parents[1]

TOKYO = ("東京は日本の首都であり、世界有数の大都市です。春には上野公園や新宿御苑で桜が咲き、"
         "多くの人々が花見を楽しみます。観光の際は、地下鉄や山手線を利用すると便利です。"
         "浅草の浅草寺、渋谷の交差点など、見どころがたくさんあります。")
SCIENCE = ("Учёные из Новосибирского государственного университета сообщили о создании нового "
           "материала, который способен выдерживать экстремально высокие температуры. Испытания "
           "проводились в течение двух лет в лаборатории института механики.")


def page(text: str, query: str) -> str:
    """An HTML page that declares no encoding, with ``text`` and a link whose query is ``query``."""
    return (f"<!DOCTYPE html>\n<html><head><title>page</title></head>\n<body><p>{text}</p>\n"
            f'<a href="/search?q={query}">{query}</a></body></html>\n')


@pytest.mark.parametrize(("text", "codec", "expected"), [
    (page(TOKYO, "天気予報"), "cp932", "shift_jis"),
    (page(TOKYO, "天気予報"), "euc_jp", "euc-jp"),
    (page(SCIENCE, "наука"), "cp1251", "windows-1251"),
    (page(SCIENCE, "наука"), "koi8_r", "koi8-r"),
])
def test_an_undeclared_page_is_in_the_encoding_its_bytes_say(text: str, codec: str,
                                                             expected: str) -> None:
    body = text.encode(codec)
    assert sniff(body, "text/html") == (expected, False)  # tentative: a later <meta> wins
    found = extract_links(body, {"Content-Type": "text/html"})
    assert found.encoding == expected and found.hrefs == [text.split('href="')[1].split('"')[0]]


@pytest.mark.parametrize(("size", "cut"), [(None, 65536), (3000, 3000)],
                         ids=["past-64-KiB", "body-cut-short"])
def test_a_character_cut_in_two_does_not_hide_the_encoding(size: int | None, cut: int) -> None:
    """The detector sees the first 64 KiB up to their last byte below 0x40 (so does a
    body cut short, as by a size cap): with a Shift_JIS character cut in two at its end, it
    would find no encoding."""
    for pad in ("", " "):  # one of the two puts byte ``cut`` inside a character
        body = page(pad + "</p>\n<p>".join([TOKYO] * 400), "天気予報").encode("cp932")[:size]
        try:
            body[:cut].decode("cp932")
        except UnicodeDecodeError:
            break
    assert len(body) > 65536 if size is None else len(body) == size
    with pytest.raises(UnicodeDecodeError):
        body[:cut].decode("cp932")
    assert sniff(body, "text/html") == ("shift_jis", False)


def test_a_declared_encoding_is_never_second_guessed() -> None:
    body = page(SCIENCE, "наука").encode("cp1251")
    assert sniff(body, "text/html; charset=koi8-r") == ("koi8-r", True)
    assert sniff(b"<meta charset=iso-8859-5>" + body, "text/html") == ("iso-8859-5", False)


def test_a_meta_past_the_prescan_beats_the_guess() -> None:
    """The guess is tentative, as the prescan's answer is: a <meta> the tree builder meets
    after the first 1024 bytes decodes the page again."""
    body = (page(SCIENCE * 5, "наука").replace("</body>", "<meta charset=windows-1252></body>")
            .encode("cp1251"))
    assert body.index(b"<meta") > 1024
    if sniff(body, "text/html")[0] == "windows-1252":  # chardet 7 reads the <meta> itself
        pytest.skip("this detector reads the <meta> itself: no guess to take back")
    assert sniff(body, "text/html")[0] == "windows-1251"
    assert extract_links(body, {"Content-Type": "text/html"}).encoding == "windows-1252"


@pytest.mark.parametrize("body", [
    page("Unsere Bäckerei wurde 1952 in München gegründet. Jeden Morgen backen wir frische "
         "Brötchen, Brezen und Vollkornbrote nach überlieferten Rezepten.", "Brötchen")
    .encode("utf-8"),
    page(TOKYO, "天気予報").encode("utf-8"),
    page("Opening hours are Monday to Friday, 9 am to 6 pm.", "hours").encode("ascii"),
    page(TOKYO, "天気予報").encode("iso2022_jp"),  # 7-bit: every byte ASCII
], ids=["utf-8-german", "utf-8-japanese", "ascii", "iso-2022-jp"])
def test_utf8_and_ascii_keep_the_fallback(body: bytes) -> None:
    """Chromium does not take valid UTF-8 for UTF-8 on a page that declares nothing, nor guess
    for ASCII bytes (tests/data/linkcases: encoding-undeclared-utf-8*, -iso-2022-jp)."""
    assert sniff(body, "text/html") == ("windows-1252", False)


def test_a_latin_script_guess_keeps_the_fallback() -> None:
    """The detector takes this Portuguese windows-1252 page for windows-1250, where Chromium
    keeps windows-1252: "ã" would be "ă", and a link to /seleção/ another URL."""
    from bs4.dammit import EncodingDetector

    body = cases()["encoding-undeclared-windows-1252-portuguese"].body
    detector = EncodingDetector(body, is_html=True)
    for _ in detector.encodings:
        pass
    if lookup(detector.chardet_encoding) == "windows-1252":  # chardet 7 reads it right
        pytest.skip("this detector reads the page right: nothing for the guard to do")
    assert lookup(detector.chardet_encoding) == "windows-1250"  # what the guard is for
    assert guess(body) is None and sniff(body, "text/html") == ("windows-1252", False)


# Where ours may differ from Chromium's answer on the undeclared cases (the rest: the same).
DIFFERENT = {"encoding-undeclared-iso-8859-7": "windows-1253",  # charset_normalizer's, same
             "encoding-undeclared-windows-1250": "windows-1252"}  # letters; a Latin script


@pytest.mark.parametrize("name", sorted(n for n in cases() if n.startswith(
    ("encoding-undeclared-", "encoding-none-"))))
def test_the_encoding_of_each_undeclared_case_is_chromiums(name: str) -> None:
    ours = sniff(cases()[name].body, "text/html")[0]
    assert ours in (lookup(truth()[name]["characterSet"]), DIFFERENT.get(name))


def test_only_an_undeclared_page_that_is_not_ascii_loads_bs4() -> None:
    """Start-up, and a crawl of pages that declare their encoding (or are ASCII), do not pay
    for beautifulsoup4 and its detector."""
    declared = page(TOKYO, "天気予報").replace("<head>", "<head><meta charset=utf-8>")
    script = ("import sys\nfrom minicrawl.html.encoding import sniff\n"
              f"sniff({declared.encode('utf-8')!r})\n"
              f"sniff({page('plain', 'x').encode('ascii')!r})\n"
              "print('bs4' in sys.modules)\n"
              f"sniff({page(TOKYO, 'x').encode('cp932')!r})\n"
              "print('bs4' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_labels_python_does_not_know_or_reads_otherwise() -> None:
    assert lookup("x-sjis") == "shift_jis" and lookup(" ISO_8859-1:1987 ") == "windows-1252"
    assert lookup("ks_c_5601-1987") == "euc-kr" and lookup("tis-620") == "windows-874"
    assert lookup("utf-16") == "utf-16le" and lookup("hz-gb-2312") == "replacement"
    assert lookup("latin-1") is None and lookup("utf-32") is None and lookup("") is None
    assert len(LABELS) == 228  # the Encoding Standard's labels (May 2026), each once
