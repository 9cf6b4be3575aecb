"""Shared parts of the ``baton eval`` tests: the Spider-format fixture laid out as Spider
does (databases built from SQL at run time), and the FunctionModel that answers its
questions from a plan: the queries it writes for each question, in order."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

from baton.evaluation import GoldenSet, Meter, Prices, RunOptions, Targets, database_target, load_golden_set, run_eval
from baton.llm import FunctionModel, tool_call
from baton.messages import LLMResponse
from baton.state.location import State

FIXTURE = Path(__file__).parent / "fixtures" / "eval" / "spider"
USAGE = {"input_tokens": 100, "output_tokens": 20}
PRICE = "1,2"  # USD per million tokens: each call costs 100 * 1e-6 + 20 * 2e-6 = $0.00014
CALL_COST = 0.00014

UNSAFE_DELETE = "DELETE FROM singer WHERE country = 'Netherlands'"
UNSAFE_DROP = "SELECT major, age FROM student; DROP TABLE pets"
BROKEN = "SELECT count(*) FROM student WHERE stuid NOT IN (SELECT stuid FROM pet_owner)"

# question -> the queries the model writes, in order (an empty list: it writes none)
PLAN: dict[str, list[str]] = {
    # right
    "How many singers do we have?": ["SELECT COUNT(*) AS singer_count FROM singer"],
    "Show name, country, age for all singers ordered by age from the oldest to the youngest.":
        ["SELECT age, name, country FROM singer ORDER BY age DESC"],
    "What are the mean, lowest and highest ages of the singers from France?":
        ["SELECT MAX(age) AS oldest, MIN(age) AS youngest, SUM(age) * 1.0 / COUNT(*) AS mean FROM singer WHERE country = 'France'"],
    "What are the names of the stadiums without any concerts?":
        ["SELECT s.name FROM stadium s LEFT JOIN concert c ON c.stadium_id = s.stadium_id WHERE c.concert_id IS NULL ORDER BY s.name"],
    "Show all countries and the number of singers in each country.":
        ["SELECT country, COUNT(*) AS singers FROM singer GROUP BY country ORDER BY singers DESC"],
    "What is the total capacity of all stadiums?": ["SELECT SUM(capacity * 1.0) FROM stadium"],
    "How many pets have a greater weight than 10?": ["SELECT COUNT(*) FROM pets WHERE weight > 10"],
    "Find the number of pets for each student who has any pet, and the student id.":
        ["SELECT stuid, COUNT(petid) AS pets FROM has_pet GROUP BY stuid"],
    "What is the average and maximum age of each pet type?":
        ["SELECT pettype, AVG(pet_age) AS mean_age, MAX(pet_age) AS oldest FROM pets GROUP BY pettype"],
    "What are the first names of the female students?": ["SELECT fname FROM student WHERE sex = 'F' ORDER BY fname"],
    "Which pet types are there?": ["SELECT pettype FROM pets GROUP BY pettype"],
    "What are the ids of the students older than 20 who have a pet?":
        ["SELECT s.stuid FROM student s WHERE s.age > 20 AND EXISTS (SELECT 1 FROM has_pet h WHERE h.stuid = s.stuid) ORDER BY s.stuid"],
    "What is the total weight of all pets?": ["SELECT SUM(weight * 3) / 3 FROM pets"],  # 50.67000000000001
    # right after one repair
    "Show the stadium name and capacity with the most concerts.": [
        "SELECT s.name, s.capcity FROM stadium s JOIN concert c ON c.stadium_id = s.stadium_id GROUP BY s.stadium_id ORDER BY COUNT(*) DESC LIMIT 1",
        "SELECT s.name, s.capacity FROM stadium s JOIN concert c ON c.stadium_id = s.stadium_id GROUP BY s.stadium_id ORDER BY COUNT(*) DESC LIMIT 1",
    ],
    # wrong
    "What are the distinct countries where singers above age 20 are from?": ["SELECT country FROM singer WHERE age > 20"],
    "What is the average capacity of the stadiums?": ["SELECT ROUND(AVG(capacity), 2) FROM stadium"],  # 14089.17 vs 14089.1666...
    "List the names of the three oldest singers, oldest first.":
        ["SELECT name FROM (SELECT name, age FROM singer ORDER BY age DESC LIMIT 3) ORDER BY name DESC"],
    "How many concerts are there in year 2014 or 2015?": ["SELECT COUNT(*) FROM concert WHERE year = 2014"],
    "What is the average weight of the dogs?": ["SELECT ROUND(AVG(weight), 1) FROM pets WHERE pettype = 'dog'"],
    "How old is the oldest student?": [],
    # unsafe
    "Which singers are from the Netherlands?": [UNSAFE_DELETE],
    "Find the major and age of students who do not have a cat pet.": [UNSAFE_DROP],
    # never valid
    "How many students have no pet?": [BROKEN] * 10,
}
ROUNDED_CAPACITY = "What is the average capacity of the stadiums?"


def spider_model(plan: dict[str, list[str]] = PLAN) -> FunctionModel:
    def answer(messages, tools):
        if any(t.name == "run_sql" for t in tools):  # the SQL specialist's turn
            question = next(m.content for m in messages if m.role == "user")
            written = sum(1 for m in messages if m.role == "assistant" and m.tool_calls)
            queries = plan[question]
            if written < len(queries):
                return LLMResponse(tool_calls=[tool_call("run_sql", {"sql": queries[written]})], usage=USAGE)
            return LLMResponse(content="That is what the data says.", usage=USAGE)
        if messages[-1].role == "tool":  # the orchestrator, after a specialist answered (or failed)
            return LLMResponse(content="Here is the answer.", usage=USAGE)
        return LLMResponse(tool_calls=[tool_call(tools[0].name, {"question": messages[-1].content})], usage=USAGE)

    return FunctionModel(answer, model="spider-double")


def build_spider(tmp_path: Path) -> Path:
    """The fixture in Spider's layout: dev.json and database/<db_id>/<db_id>.sqlite."""
    root = tmp_path / "spider"
    root.mkdir()
    shutil.copy(FIXTURE / "dev.json", root / "dev.json")
    for db in ("concert", "pets"):
        folder = root / "database" / db
        folder.mkdir(parents=True)
        with sqlite3.connect(folder / f"{db}.sqlite") as conn:
            conn.executescript((FIXTURE / f"{db}.sql").read_text())
    return root


async def run_spider(spider: Path, home: Path, model: FunctionModel, *, options: RunOptions | None = None, prices: str = PRICE,
                     golden: GoldenSet | None = None):
    """The set (or ``golden``) answered by workspaces over the fixture's databases, on a state in ``home``."""
    golden = golden or load_golden_set(spider / "dev.json")
    meter = Meter(Prices.parse(prices))
    metered = meter.wrap(model)
    state = State.from_env(env={}, home=home)

    async def opener(database):
        return await asyncio.to_thread(database_target, database, state, metered)

    async with Targets(opener) as targets:
        run = await run_eval(golden, targets, meter=meter, options=options or RunOptions(concurrency=4))
    return run, meter
