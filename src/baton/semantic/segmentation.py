"""Every way a question's words can be read as senses of one lexicon (the parser's step 1).

The lexicon says what each phrase may mean; this module applies it to a whole question: at
each word, every sense that can start there (a time expression, the model's phrases longest
first, part of an indexed value, a ranking word, a verb, a negation, a comparison, filler,
else unknown), then every walk through those senses that covers the words once. It is its
own module because two readers share it — the question parser assembles a query from each
segmentation, and the follow-up editor (``followups.py``) reads edits with the same ones —
and because it knows nothing of queries: only words, senses and the lexicon.
"""

from __future__ import annotations

from dataclasses import replace

from baton.semantic.lexicon import ASC_WORDS, COMPARE, DESC_WORDS, FILLER, NEGATIONS, VERBS, Lexicon, Sense, norm, time_senses

MAX_SEGMENTATIONS = 400


def alternatives(lexicon: Lexicon, words: list[str]) -> list[list[Sense]]:
    """The senses that may start at each word (empty inside a time span read at its start)."""
    normalised = [norm(w) for w in words]
    timed = time_senses(words)
    covered_by_time = {i for senses in timed.values() for s in senses if s.kind != "number" for i in range(s.start, s.end)}
    out: list[list[Sense]] = []
    for i, (raw, word) in enumerate(zip(words, normalised)):
        here: list[Sense] = list(timed.get(i, ()))
        if i in covered_by_time and not here:
            out.append(here)
            continue
        exact_value = False
        for size in range(min(lexicon.longest, len(words) - i), 0, -1):
            for sense in lexicon.phrases.get(tuple(normalised[i:i + size]), ()):
                here.append(replace(sense, start=i, end=i + size))
                exact_value = exact_value or sense.kind == "value"
        if not exact_value:
            for value_words, sense in lexicon.partial.get(word, ()):
                k = value_words.index(word)
                size = 1
                while i + size < len(words) and k + size < len(value_words) and normalised[i + size] == value_words[k + size]:
                    size += 1
                candidate = replace(sense, start=i, end=i + size, extra=("partial",))
                if candidate not in here:
                    here.append(candidate)
        if raw in DESC_WORDS or word in DESC_WORDS:
            here.append(Sense("direction", number=1, start=i, end=i + 1))
        if raw in ASC_WORDS or word in ASC_WORDS:
            here.append(Sense("direction", number=0, start=i, end=i + 1))
        if word in VERBS:
            here.append(Sense("verb", word, start=i, end=i + 1))
        if raw in NEGATIONS:
            here.append(Sense("negation", raw, start=i, end=i + 1))
        if raw in COMPARE:
            here.append(Sense("compare", raw, start=i, end=i + 1))
        if (raw in FILLER or word in FILLER) and not any(s.kind in ("number", "year", "quarter", "month", "range", "relative")
                                                         for s in here):
            here.append(Sense("filler", raw, start=i, end=i + 1))
        if not here:
            here.append(Sense("unknown", raw, start=i, end=i + 1))
        out.append(here)
    return out


def segmentations(lexicon: Lexicon, words: list[str]) -> list[tuple[Sense, ...]]:
    """Every sequence of senses that reads ``words`` end to end (at most ``MAX_SEGMENTATIONS``)."""
    options_at = alternatives(lexicon, words)
    results: list[tuple[Sense, ...]] = []

    def walk(i: int, path: tuple[Sense, ...]) -> None:
        if len(results) >= MAX_SEGMENTATIONS:
            return
        if i >= len(words):
            results.append(path)
            return
        options = options_at[i]
        if not options:  # inside a time span read at its start
            walk(i + 1, path)
            return
        for sense in options:
            walk(sense.end, (*path, sense))

    walk(0, ())
    return results
