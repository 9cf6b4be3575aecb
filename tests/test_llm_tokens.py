"""Token estimation: tiktoken offline from bundled BPE files, else the padded heuristic."""

from __future__ import annotations

from baton.llm.tokens import (
    CODE_PADDING,
    estimate_messages_tokens,
    estimate_tokens,
    get_encoding,
    heuristic_tokens,
    message_tokens,
)
from baton.messages import Message, ToolCall


def test_real_tokenizer_works_offline():
    encoding = get_encoding("cl100k_base")
    assert encoding is not None
    # exact, not estimated: a known tokenization of cl100k_base
    assert encoding.encode("hello world") == [15339, 1917]
    assert estimate_tokens("hello world") == 2
    assert get_encoding("o200k_base") is not None


def test_heuristic_pads_code_and_non_latin_text():
    prose = "the quick brown fox jumps over the lazy dog " * 10
    code = '{"a": [1, 2], "b": {"c": "d"}} ' * 14
    assert heuristic_tokens(prose) == -(-len(prose) // 4)
    assert heuristic_tokens(code) >= int(len(code) / 4 * CODE_PADDING)
    cjk = "数据库查询结果" * 10
    assert heuristic_tokens(cjk) > len(cjk) / 4 * 2  # far denser than 4 chars/token


def test_message_tokens_count_tool_calls_and_broken_arguments():
    plain = Message.assistant("ok")
    with_call = Message.assistant("ok", [ToolCall(id="c", name="run_sql", arguments={"query": "SELECT 1"})])
    broken = Message.assistant("ok", [ToolCall(id="c", name="run_sql", raw_arguments='{"query": "SELECT 1 FROM a_long_table')])
    assert message_tokens(with_call) > message_tokens(plain)
    assert message_tokens(broken) > message_tokens(plain)
    assert estimate_messages_tokens([plain, with_call]) == message_tokens(plain) + message_tokens(with_call)
    assert estimate_tokens("") == 0


def test_the_repeated_text_table_keeps_its_count_under_threads():
    """Worker threads count tokens too (bundles, presentation): evicting and inserting at
    once must keep the table within its bounds and its character count true."""
    import threading

    from baton.llm import tokens

    texts = [f"{n:05d} " + "system prompt text " * 40 for n in range(2 * tokens.REPEATED_MAX_ENTRIES)]

    def count(offset: int) -> None:
        for text in texts[offset::4] + texts:
            tokens.estimate_tokens(text)

    threads = [threading.Thread(target=count, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tokens._REPEATED) <= tokens.REPEATED_MAX_ENTRIES
    assert tokens._repeated_chars == sum(len(text) for text, _ in tokens._REPEATED)
