#!/usr/bin/env python3
# Writes strings.json: the inputs of the o200k pre-tokenizer split test. Hand-picked cases
# (accents, capitals, CJK, digits, emoji, whitespace runs, apostrophes, marks, newlines)
# and combinations of fragments drawn with a fixed seed. Deterministic.
import json
import random

HAND = [
    "Hello world", "Hello, world!", "HELLO WORLD", "HelloWorld", "helloWORLD", "iPhone", "McDonald's",
    "XMLHttpRequest", "getHTTPResponseCode", "ABCdef", "aBCdEF", "I'm", "I'M", "you're", "YOU'RE",
    "they've", "he'll", "she'd", "it's", "It'S", "don't", "DON'T", "can't stop", "'s", " 's", "x's's",
    "rock'n'roll", "O'Neil", "l'homme", "'hello'", "\"quoted\"", "naïve café", "Élodie", "ÉCOLE",
    "École", "ÜBER", "Über", "überall", "Straße", "STRASSE", "ÆSIR", "Ærø", "ﬁnance", "Ǆemal", "ǅemal",
    "Ελληνικά", "ΑθήναΑθήνα", "ΑΘΗΝΑ", "Москва", "МоскваМосква", "МОСКВА", "привет мир", "Ünïcödé",
    "e\u0301cole", "E\u0301COLE", "cafe\u0301", "n\u0303", "a\u0308b\u0308c\u0308", "\u0301start",
    "हिन्दी भाषा", "नमस्ते", "தமிழ்", "ภาษาไทย", "العربية", "مَرْحَبًا", "עברית", "한국어 텍스트",
    "日本語のテキスト", "中文文本", "中文English混合", "English中文", "カタカナとひらがな", "ｆｕｌｌｗｉｄｔｈ",
    "ＡＢＣ", "1", "12", "123", "1234", "12345", "1234567", "3.14159", "1,000,000", "-42", "+7",
    "2024-06-01", "10:30pm", "v1.2.3", "0x1F", "٣٤٥", "१२३४", "①②③", "½ cup", "Ⅻ", "²³", "x²",
    "😀", "😀😀", "hi 😀", "😀hi", "👍🏽", "👨‍👩‍👧", "❤️", " ❤️ ", "🇫🇷", "a😀b", "★☆", "→ ←",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n ", " \n ", "a  b", "a   b", "a \n b",
    "a\n\nb", "a\r\nb", "  leading", "trailing  ", "\ttab\tseparated", "line1\nline2\n", "x\u00a0y",
    "x\u2003y", "x\u3000y", "\u3000\u3000", "a\u2028b", "a\u0085b", "a\u200bb",
    "!!!", "...", "?!", "a...b", "a!!!\n\n", "a//b", "http://example.com/path?q=1&r=2",
    "foo/bar/", "end./\n", "!\n/", "a.\n/b", "x)\r\n//y", "?\n\n/\n", "(x+y)*z", "[1, 2, 3]", "{\"k\": \"v\"}", "<tag attr=\"v\">",
    "#include <stdio.h>", "def f(x):\n    return x", "if (a && b) { c(); }", "a_b_c", "__init__",
    "snake_case_name", "camelCaseName", "PascalCaseName", "SCREAMING_CASE", "kebab-case-name",
    "email@example.com", "$100", "€50", "£3.50", "¥", "100%", "#hashtag", "@mention",
    "\u00ad", "a\u00adb", "ǈ", "ǉ", "Ǉ", "ǋ", "ᾈ", "ᾀ", "ʰ", "ʰa", "aʰ", "Aʰ", "ꜰ", "ß", "ẞ",
    "ﬀ", "ǅ", "ǅa", "Ǆa", "aǅ", "Aǅb", "µ", "ºC", "ª", "Ⅰ", "ⅰ", "İstanbul", "ıi", "ŉ",
]

FRAGMENTS = [
    "Hello", "WORLD", "world", "Über", "ÉCOLE", "école", "naïve", "Москва", "ΑΘΗΝΑ", "Αθήνα", "中文", "日本",
    "한국", "123", "4567", "٣٤", "😀", "👍🏽", "❤️", "'s", "'LL", "'re", "don't", "I'M", " ", "  ", "\n",
    "\r\n", "\t", "!", "...", "/", "?", "(", ")", "-", "_", "e\u0301", "हि", "ภา", "x", "X", "iPhone",
    "HTTPServer", "a1", "1a", "$", "%", "\u00a0", "\u3000", ",", ".", "\"", "'",
]


def main():
    rng = random.Random(20261205)
    out = list(HAND)
    seen = set(out)
    while len(out) < 360:
        n = rng.randint(2, 6)
        s = "".join(rng.choice(FRAGMENTS) for _ in range(n))
        if s not in seen:
            seen.add(s)
            out.append(s)
    with open("strings.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
