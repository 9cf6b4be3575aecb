"""Verified questions of the demo workspace: question -> SQL pairs a person has checked.

They are the demo's benchmarks in memory, the few-shot examples the SQL specialists are
shown, and what the LLM-free fast path answers without any model call.

Slots (``baton.verified``): every question that names 2025 may be asked for another year,
and every ranked one for its top N ("top 3 Epson products in 2024"). The two roadshow
questions name no year, so "... in 2024" is another question for them (their SQL covers
every event).
"""

from __future__ import annotations

from baton.verified import Slot, VerifiedQuestion

YEAR = Slot("year", "year", "2025")
TOP = Slot("top", "limit")


def _rev(unit: int) -> str:
    return (
        "SELECT month, ROUND(SUM(revenue_cents) / 100.0, 2) AS revenue FROM monthly_revenue "
        f"WHERE unit_id = {unit} AND month LIKE '2025-%' GROUP BY month ORDER BY month"
    )


def _by_product(unit: int) -> str:
    return (
        "SELECT p.name AS product, ROUND(SUM(r.revenue_cents) / 100.0, 2) AS revenue "
        "FROM monthly_revenue r JOIN products p ON p.id = r.product_id "
        f"WHERE r.unit_id = {unit} AND r.month LIKE '2025-%' GROUP BY p.name ORDER BY revenue DESC"
    )


def _vq(agent: str, question: str, sql: str, *slots: Slot) -> VerifiedQuestion:
    return VerifiedQuestion(question=question, sql=sql, agent=agent, connection_id="demo", slots=slots, source="demo")


VERIFIED_QUESTIONS: tuple[VerifiedQuestion, ...] = (
    _vq("pokemon_finance", "What was Pokemon revenue by month in 2025?", _rev(1), YEAR),
    _vq("pokemon_finance", "Which Pokemon products sold the most in 2025?", _by_product(1), YEAR, TOP),
    _vq("epson_finance", "What was Epson revenue by month in 2025?", _rev(2), YEAR),
    _vq("epson_finance", "Which Epson products sold the most in 2025?", _by_product(2), YEAR, TOP),
    _vq("roadshows_finance", "How many tickets did each roadshow city sell?",
        "SELECT city, SUM(tickets_sold) AS tickets FROM roadshow_events WHERE deleted_at IS NULL "
        "GROUP BY city ORDER BY tickets DESC", TOP,
    ),
    _vq("roadshows_finance", "What was the profit of each roadshow city?",
        "SELECT city, ROUND(SUM(tickets_sold * ticket_price - venue_cost), 2) AS profit FROM roadshow_events "
        "WHERE deleted_at IS NULL GROUP BY city ORDER BY profit DESC", TOP,
    ),
    _vq("roadshows_finance", "What was Roadshows revenue by month in 2025?", _rev(3), YEAR),
    _vq("general_finance", "What was total revenue by business unit in 2025?",
        "SELECT u.name AS business_unit, ROUND(SUM(r.revenue_cents) / 100.0, 2) AS revenue "
        "FROM monthly_revenue r JOIN business_units u ON u.id = r.unit_id WHERE r.month LIKE '2025-%' "
        "GROUP BY u.name ORDER BY revenue DESC", YEAR, TOP,
    ),
    _vq("general_finance", "What were total costs by category in 2025?",
        "SELECT category, ROUND(SUM(amount), 2) AS cost FROM monthly_costs WHERE month LIKE '2025-%' "
        "GROUP BY category ORDER BY cost DESC", YEAR, TOP,
    ),
    _vq("general_finance", "What was the profit of each business unit in 2025?",
        "WITH rev AS (SELECT unit_id, SUM(revenue_cents) / 100.0 AS revenue FROM monthly_revenue "
        "WHERE month LIKE '2025-%' GROUP BY unit_id), cost AS (SELECT unit_id, SUM(amount) AS cost "
        "FROM monthly_costs WHERE month LIKE '2025-%' GROUP BY unit_id) "
        "SELECT u.name AS business_unit, ROUND(rev.revenue - cost.cost, 2) AS profit FROM business_units u "
        "JOIN rev ON rev.unit_id = u.id JOIN cost ON cost.unit_id = u.id ORDER BY profit DESC", YEAR, TOP,
    ),
)
