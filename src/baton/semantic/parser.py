"""From a question to a semantic query, deterministically, or an honest "which did you mean?".

1. The question's words are read every way the lexicon allows (``lexicon.py``,
   ``segmentation.py``): "roadshow" is the business unit *Roadshows* or a word naming
   roadshow events; "profit" is ``profit`` (revenue - cost) or ``event_profit``; "tickets" is
   a metric or the product category.
2. Each reading is assembled into a ``SemanticQuery``:
   - metrics: the metrics named; with none, a verb implies the metrics whose words it shares
     ("sold" -> sales, units sold, tickets sold), one reading each;
   - group-by: every dimension named ("by city", "each product", "which units"), except one
     that only qualifies a value next to it ("the Epson business unit"); a grain ("monthly",
     "by quarter"); and a dimension or time that the question names several values of
     ("Epson vs Pokemon", "2024 and 2025": compared side by side);
   - filters: the dimensions' indexed values (quoted literals when compiled, never the
     question's text), and periods (years, "March 2025", "Q3 2025", "from March to June
     2025"; a month or quarter takes the year next to it, or the question's only year:
     ``named_periods.py``);
   - order and limit: "top 5", "the 3 lowest", "highest" (a ranking needs something to rank).
3. A reading is valid when nothing in it is unknown, every context word is used ("roadshow"
   must be about roadshow events or the unit), and the model can answer it
   (``SemanticQuery.check``: "cost cannot be broken down by city").
4. Among valid readings, those that read the words as the fewest, longest phrases of the
   model win ("units sold" is the metric, not "units" + "sold"; "roadshow profit" is the
   model's synonym of ``event_profit``): a phrase the model's author declared is evidence,
   a split of it is not. Then a reading that names its metric beats one a verb only implies,
   and the words' own tie-breaks apply (``preference.py``: "revenue from customers in Germany"
   filters by the customers' country, it does not count customers; "which category had the
   highest revenue" is a top 1). Readings that remain different are not chosen between.

Outcome: exactly one distinct valid query -> ``Parsed``; several -> ``AskBack`` with them; none,
but the question is about metrics -> ``AskBack`` with the nearest answerable readings (unknown
words and negations left out, a missing year filled with each year of the data, an
impossible breakdown dropped), each said as a question that reads back to exactly that query
(checked: a suggestion that would not answer itself when clicked is not offered); no metric
at all -> ``NotMetric`` (another route answers). Ambiguity and unknown words are never guessed
into an answer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

from baton.phrasing import raw_words
from baton.semantic.lexicon import FILLER, VERBS, Lexicon, Sense, phrase_of
from baton.semantic.model import GRAINS, TIME, SemanticModel
from baton.semantic.named_periods import expand_period, named_periods
from baton.semantic.periods import Period
from baton.semantic.preference import loose, names_one, unjoined_count
from baton.semantic.query import SemanticQuery, SemanticQueryError
from baton.semantic.render import render_question
from baton.semantic.segmentation import segmentations
from baton.semantic.word_roles import counted, names_period_grain, names_value_type

MAX_READINGS = 3
_QUALIFIER_GAP = frozenset({"the", "of", "a", "an"})
_BREAKDOWN = frozenset({"by", "per", "each"})  # the word before a breakdown: what follows is a dimension


@dataclass(frozen=True, slots=True)
class Parsed:
    query: SemanticQuery


@dataclass(frozen=True, slots=True)
class AskBack:
    reason: str  # ambiguous | unknown_words | cannot_answer | needs_period | not_computed
    message: str
    readings: tuple[SemanticQuery, ...] = ()
    questions: tuple[str, ...] = ()  # each reading said as a question (clickable)
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NotMetric:
    pass


@dataclass
class _Draft:
    """One reading's assembly: a query, or why it is not one (and what would repair it)."""

    query: SemanticQuery | None = None
    problems: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    repairs: list[SemanticQuery] = field(default_factory=list)
    segments: int = 0  # senses the words were read as: fewer means longer phrases of the model's own
    implied: bool = False  # its metric is implied by a verb ("sold"), not named
    loose: int = 0  # words that name an entity ("from customers in Germany") read as a metric or a breakdown instead
    refusal: str = ""  # the reading names a metric or dimension Baton does not compute (``Refusal.message``)


class QuestionParser:
    """Reads questions for one model and its value index (immutable, shared by requests)."""

    def __init__(self, model: SemanticModel, values: dict[str, list[str]] | None = None, years: tuple[int, ...] = ()) -> None:
        self.model = model
        self.lexicon = Lexicon(model, values)
        self.years = tuple(sorted(set(years), reverse=True))  # the data's years, latest first

    # --- public -------------------------------------------------------------------------------

    def parse(self, question: str) -> Parsed | AskBack | NotMetric:
        return self._parse(" ".join(str(question).split())[:1000])

    @functools.lru_cache(maxsize=2048)  # noqa: B019  (a parser lives as long as its model: the cache may hold it)
    def _readings(self, question: str) -> tuple[list[_Draft], list[SemanticQuery]]:
        """Every reading's draft, and the distinct valid queries."""
        words = raw_words(question)[:60]
        drafts = [d for seq in self._segmentations(words) for d in self._assemble(seq, words)]
        good = [d for d in drafts if d.query is not None and not d.problems]
        refusing = [d for d in drafts if d.refusal]
        fewest = min((d.segments for d in (*good, *refusing)), default=0)
        if any(d.segments == fewest for d in refusing):  # "total transactions" names a metric not computed: never
            return drafts, []  # answer another that shares its words ("transactions")
        good = [d for d in good if d.segments == fewest]
        if any(not d.implied for d in good):  # a metric the question names wins over one a verb implies
            good = [d for d in good if not d.implied]
        loosest = min((d.loose for d in good), default=0)  # "revenue from customers in Germany": customers qualify
        return drafts, _distinct([d.query for d in good if d.loose == loosest and d.query is not None])

    @functools.lru_cache(maxsize=1024)  # noqa: B019  (as above)
    def _parse(self, question: str):
        drafts, valid = self._readings(question)
        if not drafts:
            return NotMetric()
        refusal = next((d.refusal for d in sorted(drafts, key=lambda d: d.segments) if d.refusal), "")
        if not valid and refusal:
            return AskBack("not_computed", f"{refusal}, so I won't answer it without it.")
        if len(valid) == 1:
            return Parsed(valid[0])
        if len(valid) > 1:
            readings, questions = self._said(valid)
            if len(questions) < 2:  # the readings cannot be told apart in words: never pick one
                return AskBack("ambiguous", "This question can be read in more than one way, and I cannot say which in words: "
                               "please name the metric and the breakdown.", tuple(readings), tuple(questions))
            return AskBack("ambiguous", "This question can be read in more than one way, so I won't guess. Did you mean:",
                           tuple(readings), tuple(questions))
        unknown = sorted({w for d in drafts for w in d.unknown})
        repairs = _distinct([*self._described(unknown), *(q for d in drafts for q in d.repairs)])
        readings, questions = self._said(repairs)
        if unknown:
            lead = f"I don't know how to read {_quoted(unknown)} here, so I won't guess."
            reason = "unknown_words"
        else:
            problems = list(dict.fromkeys(p for d in drafts for p in d.problems))
            lead = " ".join(p[0].upper() + p[1:] + ("" if p.endswith(".") else ".") for p in problems[:2])
            reason = "needs_period" if any("which year" in p for p in problems) else "cannot_answer"
        if questions:
            lead += " Questions I can answer:" if reason != "needs_period" else " Did you mean:"
        return AskBack(reason, lead, tuple(readings), tuple(questions), tuple(unknown))

    def _described(self, unknown: list[str]) -> list[SemanticQuery]:
        """Metrics whose description holds every unknown word ("cancelled" -> the metric described as
        "transactions that were cancelled"): offered as readings to click, never answered unasked."""
        wanted = {phrase_of(w)[0] for w in unknown if phrase_of(w)} - FILLER
        if not wanted or len(wanted) != len(unknown):
            return []
        def described(metric) -> str:  # a simple metric is also described by its measure
            measure = self.model.measure(metric.measure).description if metric.type == "simple" and metric.measure else ""
            return f"{metric.description} {metric.label} {measure}"

        found = [SemanticQuery((m.name,)) for m in self.model.metrics if wanted <= set(phrase_of(described(m)))]
        return found if len(found) <= MAX_READINGS else []

    def _said(self, queries: list[SemanticQuery]) -> tuple[list[SemanticQuery], list[str]]:
        readings, questions = [], []
        for query in queries:
            text = render_question(self.model, query, self._reads_back)
            if text is not None and text not in questions:
                readings.append(query)
                questions.append(text)
            if len(questions) == MAX_READINGS:
                break
        return readings, questions

    def _reads_back(self, text: str, query: SemanticQuery) -> bool:
        _, valid = self._readings(" ".join(text.split()))
        return valid == [query]

    def _segmentations(self, words: list[str]) -> list[tuple[Sense, ...]]:
        """The words' segmentations (``segmentation.py``); the follow-up editor reads with them too."""
        return segmentations(self.lexicon, words)

    # --- assembling a reading -----------------------------------------------------------------

    def _assemble(self, seq: tuple[Sense, ...], words: list[str]) -> list[_Draft]:
        refused = [s for s in seq if s.kind == "refused"]
        if refused:
            refusal = self.model.refusal(refused[0].name, refused[0].value or None)
            return [_Draft(problems=["not computed"], segments=len(seq), refusal=refusal.message if refusal else "")]
        metrics = list(dict.fromkeys(s.name for s in seq if s.kind == "metric"))
        verbs = [s for s in seq if s.kind == "verb"]
        if not metrics and not verbs:
            return []  # not about a metric
        shared = _Draft()
        meaningful = [s for s in seq if s.kind != "filler"]
        negated = {i for i, s in enumerate(meaningful) if i and meaningful[i - 1].kind == "negation" and s.kind == "value"}
        shared.unknown += [s.name for s in seq if s.kind in ("unknown", "negation", "relative")]
        qualifier = unjoined_count(self.lexicon, words, seq)
        if qualifier:
            shared.problems.append(f"“{qualifier}” is read as a second metric, with no “and” to say so")
        for sense in seq:  # "customers who placed an order": "order" names the model's orders, it is no filler here
            if sense.kind == "filler" and any(k.kind in ("entity", "metric") for k in self.lexicon.phrases.get(phrase_of(sense.name), ())):
                shared.problems.append(f"“{sense.name}” names something of this model, and I cannot tell what it does here")
        candidates = [metrics] if metrics else [[m] for m in self._implied(verbs)]
        if not candidates:
            shared.problems.append("no metric of this model is sold, made or spent that way")
            return [shared]
        values: dict[str, list[str]] = {}
        by: list[str] = []
        grains: list[tuple[int, str]] = []
        for index, sense in enumerate(meaningful):
            if sense.kind == "value" and sense.start and words[sense.start - 1].lower() in ("by", "per"):
                shared.problems.append(f"“{words[sense.start - 1]} {sense.value}” names a value where a breakdown goes")
            if sense.kind == "value" and index not in negated:
                listed = values.setdefault(sense.name, [])
                if sense.value not in listed:
                    listed.append(sense.value)
            elif sense.kind == "dimension" and not names_value_type(meaningful, index):
                if sense.name not in by:
                    by.append(sense.name)
                if counted(seq, sense):
                    shared.problems.append(f"“how many {words[sense.start]}” counts them; it does not list them")
            elif sense.kind == "grain" and not names_period_grain(meaningful, index):
                grains.append((index, sense.name))
        explicit = sorted({g for _, g in grains if g})
        if len(explicit) > 1:
            shared.problems.append(f"the question names several time grains ({', '.join(explicit)})")
        grain = explicit[0] if explicit else None
        if grains:
            position = grains[0][0]
            before = {s.name for s in meaningful[:position] if s.kind == "dimension" and s.name in by}
            by.insert(len(before), TIME)
        periods, needs_year = named_periods(meaningful, shared.problems)
        for name, listed in values.items():
            if len(listed) > 1 and name not in by:
                by.append(name)
        if len(periods) > 1 and TIME not in by:
            by.append(TIME)
            grain = grain or periods[0].grain
        order, limit = self._ranking(meaningful, shared)
        if any(s.kind == "compare" for s in meaningful) and not (len(periods) > 1 or any(len(v) > 1 for v in values.values())):
            shared.unknown += [s.name for s in meaningful if s.kind == "compare"]
        entities = {s.name for s in meaningful if s.kind == "entity"}
        ranked = any(s.kind == "direction" for s in meaningful)  # "top 5 cities by revenue": "by" names the ranking metric
        if not ranked and any(s.kind == "metric" and i and seq[i - 1].kind == "filler" and seq[i - 1].name in _BREAKDOWN
                              for i, s in enumerate(seq)):
            shared.problems.append("a breakdown (“by …”) names a dimension, not a metric")
        by = _with_companions(self.model, by)
        if limit is None and order is not None and names_one(seq, words, by):
            limit = 1  # "which category had the highest revenue": one category
        looseness = loose(self.model, self.lexicon, seq, words, ranked)
        drafts = []
        for metric_list in candidates:
            draft = _Draft(problems=list(shared.problems), unknown=list(shared.unknown), segments=len(seq),
                           implied=not metrics, loose=looseness)
            query = SemanticQuery(tuple(metric_list), tuple(by), grain if TIME in by else None,
                                  tuple((k, tuple(v)) for k, v in values.items()), tuple(periods),
                                  ((metric_list[0], order),) if order is not None else (), limit)
            self._judge(draft, query, entities, needs_year, order is not None)
            drafts.append(draft)
        if not metrics and len(drafts) > 1 and sum(d.query is not None for d in drafts) == 1:  # "best selling genre": revenue or
            verb = words[verbs[0].start]  # units? Not the one that happens to reach the genre
            meant = " or ".join(self.model.metric(c[0]).title for c in candidates)
            for draft in drafts:
                if draft.query is not None:
                    draft.repairs.append(draft.query)
                    draft.query = None
                draft.problems.append(f"“{verb}” could mean {meant}")
        return drafts

    def _implied(self, verbs: list[Sense]) -> list[str]:
        stems = {w for v in verbs for w in VERBS[v.name]}
        out = []
        for metric in self.model.metrics:
            phrases = self.lexicon.words_of("metric", metric.name)
            if any(w in stems for p in phrases for w in p):
                out.append(metric.name)
        return out

    def _ranking(self, meaningful: list[Sense], draft: _Draft) -> tuple[bool | None, int | None]:
        directions = [(i, s) for i, s in enumerate(meaningful) if s.kind == "direction"]
        numbers = [(i, s) for i, s in enumerate(meaningful) if s.kind == "number"]
        if len({s.number for _, s in directions}) > 1:
            draft.problems.append("the question asks for the highest and the lowest at once")
        order = bool(directions[0][1].number) if directions else None
        limit = None
        for i, number in numbers:
            near = any(abs(i - j) == 1 for j, _ in directions) or (i >= 2 and meaningful[i - 1].kind == "direction")
            if not near or not 1 <= number.number <= 1000 or limit is not None:
                draft.unknown.append(str(number.number))
                continue
            limit = number.number
        return order, limit

    def _judge(self, draft: _Draft, query: SemanticQuery, entities: set[str], needs_year: list[Sense], ranked: bool) -> None:
        """Check ``query``; keep it as the draft's answer, or as a repair with the problem."""
        model = self.model
        problems: list[str] = []
        used = {model.measure(m).entity for name in query.metrics for m in model.measures_of(name)}
        dimensions = {model.dimension(d).entity for d in (*query.by, *(n for n, _ in query.where)) if d != TIME}
        for start in list(used):  # the entities a join passes through qualify too ("revenue from customers in Germany")
            for goal in dimensions:
                used |= {step.name for step, _ in model.path(start, goal) or ()}
        used |= dimensions
        stray = sorted(entities - used)
        if stray:
            problems.append(f"“{stray[0].replace('_', ' ')}” does not fit {' and '.join(model.metric(m).title for m in query.metrics)}")
        if any(s.kind != "relative" for s in needs_year):
            problems.append("which year? The question names a month or quarter without its year")
        if (ranked or query.limit) and not query.by:
            problems.append("a ranking needs something to rank (by product, by month ...)")
        try:
            checked = query.check(model)
        except SemanticQueryError as exc:
            problems.append(str(exc))
            checked = None
        if checked is not None and not problems and not draft.problems and not draft.unknown:
            draft.query = checked
            return
        draft.problems += [p for p in problems if p not in draft.problems]
        draft.repairs += self._repairs(query, needs_year, ranked)

    def _repairs(self, query: SemanticQuery, needs_year: list[Sense], ranked: bool) -> list[SemanticQuery]:
        """Answerable neighbours of an unanswerable reading (module docstring)."""
        model = self.model
        base = query
        measures = [m for name in query.metrics for m in model.measures_of(name)]
        keep_by = tuple(d for d in query.by if all(model.reachable(m, d) for m in measures))
        keep_where = tuple((d, v) for d, v in query.where if all(model.reachable(m, d) for m in measures))
        base = replace(base, by=keep_by, where=keep_where, grain=base.grain if TIME in keep_by else None)
        options = [base]
        finest = model.finest_grain(tuple(measures))
        if TIME in base.by and base.grain and finest and GRAINS.index(base.grain) < GRAINS.index(finest):
            options = [replace(base, grain=finest), replace(base, by=tuple(b for b in base.by if b != TIME), grain=None)]
        if needs_year:
            options = []
            for year in self.years[:2]:
                added: list[Period] = []
                for part in needs_year:
                    added += [Period.parse(str(year))] if part.kind == "relative" else expand_period(part, year)
                periods = tuple(dict.fromkeys((*base.periods, *added)))
                by, grain = base.by, base.grain
                if len(periods) > 1 and TIME not in by:
                    by, grain = (*by, TIME), periods[0].grain
                options.append(replace(base, periods=periods, by=by, grain=grain))
        if (ranked or base.limit) and not base.by:
            ranked_options = []
            for option in options:
                for dimension in (*model.dimensions,):
                    if all(model.reachable(m, dimension.name) for m in measures):
                        ranked_options.append(replace(option, by=(dimension.name,)))
            options = ranked_options
        out = []
        for option in options:
            try:
                out.append(option.check(model))
            except SemanticQueryError:
                continue
        return out


def _with_companions(model: SemanticModel, by: list[str]) -> list[str]:
    """``by`` with the dimensions shown beside each (an entity's key: its name dimension)."""
    out: list[str] = []
    for name in by:
        out.append(name)
        if name != TIME and model.has_dimension(name):
            out += [c for c in model.dimension(name).shown_with if c not in by and c not in out]
    return out


def _distinct(queries: list[SemanticQuery]) -> list[SemanticQuery]:
    return list(dict.fromkeys(q for q in queries if q is not None))


def _quoted(words: list[str]) -> str:
    quoted = [f"“{w}”" for w in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


__all__ = ["AskBack", "NotMetric", "Parsed", "QuestionParser"]
