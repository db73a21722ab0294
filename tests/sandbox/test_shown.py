"""agent.sandbox.shown: what of a command's output people see — its last lines, bounded, with
secrets masked."""

from __future__ import annotations

from agent.sandbox.shown import MASK, masked, output_tail, secret_values


def test_the_tail_keeps_the_last_non_blank_lines() -> None:
    output = "".join(f"line {n}\n" for n in range(100)) + "\n\n"
    assert output_tail(output, [], lines=3) == "line 97\nline 98\nline 99"


def test_the_tail_stays_within_its_characters_and_cuts_long_lines() -> None:
    output = "".join(f"{n:03} " + "x" * 5000 + "\n" for n in range(3))
    tail = output_tail(output, [], chars=400)
    assert tail.startswith("002 ") and tail.endswith("…") and len(tail) <= 400


def test_a_carriage_return_starts_a_line_again_as_on_a_terminal() -> None:
    assert output_tail("fetching 10%\rfetching 100%\ndone\n", [], lines=2) == (
        "fetching 100%\ndone"
    )


def test_the_values_of_secret_variables_are_masked() -> None:
    secrets = secret_values({"NPM_TOKEN": "s3cr3t-value-123", "PATH": "/usr/bin:/bin"})
    assert secrets == ["s3cr3t-value-123"]
    assert output_tail("auth s3cr3t-value-123 refused\n", secrets) == f"auth {MASK} refused"


def test_credentials_in_urls_and_token_shaped_words_are_masked() -> None:
    text = masked(
        "GET https://user:hunter22@registry.example/pkg\n"
        "GET https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r.git\n"
        "Authorization: Bearer abcdefghijklmnop\n"
        "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n",
        [],
    )
    for secret in ("hunter22", "ghp_abc", "abcdefghijklmnop", "npm_abc"):
        assert secret not in text
    assert text.count(MASK) == 4


def test_a_url_naming_a_user_and_no_secret_stays_readable() -> None:
    line = "npm ERR! git dep preparation failed: ssh://git@github.com/octo/dep.git"
    assert masked(line, []) == line
    assert masked("SyntaxError: Unexpected token export", []) == (
        "SyntaxError: Unexpected token export"
    )
