"""Every turn exactly once across replicas while the state database hangs and refuses (issue
25): 3 ``baton serve`` replicas on one PostgreSQL state reached through the fault proxy, a
stub model. Two kinds of client ask at once, each question its own text:

- keyed clients: ``POST /v1/ask`` with ``turn_id`` on a random replica; after a 503 (or a
  connection that failed) they ask again with the same key, on any replica, until answered;
- stock ``openai`` SDK clients on the chat endpoint, default retries, no key: a question the
  SDK finally fails is given up (it may be stored; it must not be stored twice).

Meanwhile the state database hangs (``freeze``) and then refuses connections (``drop``),
each for a few seconds. Counted in the state database directly, over at least ``TURNS``
acknowledged turns: no question is stored twice, and every acknowledged turn is stored.
"""

import random
import threading
import time
import uuid

import httpx
import openai
import pytest
import sqlalchemy as sa

from fault_proxy import proxied
from pg_fresh import fresh_database
from scale_rig import StubModel, build_shop, process_env, serve

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

TURNS = 500
KEYED_CLIENTS = 6
SDK_CLIENTS = 3
OUTAGE_S = 6.0
MAX_RUN_S = 170.0  # the clients stop here whatever the count (the assertion then says how many)


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acknowledged: dict[str, str] = {}  # question -> turn id it was answered with
        self.given_up: list[str] = []
        self.statuses: dict[str, int] = {}
        self.stop = threading.Event()
        self.errors: list[str] = []

    def count(self, what: str) -> None:
        with self.lock:
            self.statuses[what] = self.statuses.get(what, 0) + 1

    def answered(self, question: str, turn_id: str) -> None:
        with self.lock:
            self.acknowledged[question] = turn_id


def keyed_client(n: int, urls: list[str], headers: dict[str, str], tally: Tally) -> None:
    rng = random.Random(n)
    with httpx.Client(timeout=httpx.Timeout(30.0)) as client:
        i = 0
        while not tally.stop.is_set():
            i += 1
            question, key = f"Total sales by region? (keyed {n}-{i})", uuid.uuid4().hex
            while True:  # until answered: the same key every time
                try:
                    response = client.post(f"{rng.choice(urls)}/v1/ask", json={"question": question, "turn_id": key}, headers=headers)
                except httpx.HTTPError:
                    tally.count("keyed:connection")
                    time.sleep(0.2)
                    continue
                tally.count(f"keyed:{response.status_code}")
                if response.status_code == 200:
                    tally.answered(question, response.json()["turn_id"])
                    break
                if response.status_code != 503 or response.json().get("turn_id") not in (None, key):
                    tally.errors.append(f"{response.status_code}: {response.text[:300]}")  # a turn's 503 names its key
                    break
                time.sleep(min(float(response.headers.get("Retry-After", "1")), 0.5))


def sdk_client(n: int, urls: list[str], key: str, model: str, tally: Tally) -> None:
    clients = [openai.OpenAI(base_url=f"{url}/v1", api_key=key, timeout=30.0) for url in urls]  # default max_retries=2
    i = 0
    while not tally.stop.is_set():
        i += 1
        question = f"Total sales by region? (sdk {n}-{i})"
        try:
            completion = random.choice(clients).chat.completions.create(model=model, messages=[{"role": "user", "content": question}])
        except openai.APIStatusError as exc:
            tally.count(f"sdk:{exc.status_code}")
            tally.given_up.append(question)
            time.sleep(0.2)
            continue
        except openai.APIConnectionError:
            tally.count("sdk:connection")
            tally.given_up.append(question)
            continue
        tally.count("sdk:200")
        tally.answered(question, completion.model_extra["baton"]["turn_id"])


@pytest.fixture
def cluster(postgres_url, tmp_path):
    stub = StubModel().start()
    shop = build_shop(tmp_path / "shop.sqlite")
    replicas = []
    with fresh_database(postgres_url) as state_url, proxied(state_url) as (proxy, through_proxy):
        try:
            replicas = [serve(f"replica-{i}", process_env(tmp_path / f"home-{i}", through_proxy, stub.model_string),
                              "--database", shop) for i in (1, 2, 3)]
            for replica in replicas:
                replica.wait_ready()
            yield proxy, replicas, state_url
        finally:
            proxy.set("pass")
            for replica in replicas:
                replica.stop()
            stub.stop()


def test_no_turn_stored_twice_or_lost_while_the_state_database_hangs_and_refuses(cluster):
    proxy, replicas, state_url = cluster
    key = replicas[0].key()
    headers = {"Authorization": f"Bearer {key}"}
    urls = [r.url for r in replicas]
    model = httpx.get(f"{urls[0]}/v1/models", headers=headers, timeout=30).json()["data"][0]["id"]
    tally = Tally()
    clients = [threading.Thread(target=keyed_client, args=(n, urls, headers, tally), daemon=True) for n in range(KEYED_CLIENTS)]
    clients += [threading.Thread(target=sdk_client, args=(n, urls, key, model, tally), daemon=True) for n in range(SDK_CLIENTS)]
    started = time.monotonic()
    for client in clients:
        client.start()
    faults = []
    try:
        for mode in ("freeze", "drop", "freeze", "drop"):  # outages while the clients ask, with time between
            time.sleep(OUTAGE_S / 2)
            proxy.set(mode)
            faults.append(mode)
            time.sleep(OUTAGE_S)
            proxy.set("pass")
        while len(tally.acknowledged) < TURNS and time.monotonic() - started < MAX_RUN_S:
            time.sleep(0.5)
    finally:
        proxy.set("pass")
        tally.stop.set()
        for client in clients:
            client.join(60)
    time.sleep(2)  # writes released by the last outage have committed by now (each waits at most its timeout)

    engine = sa.create_engine(state_url)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT question, turn_id FROM baton_turns")).all()
    engine.dispose()
    by_question: dict[str, list[str]] = {}
    for question, turn_id in stored:
        by_question.setdefault(question, []).append(turn_id)
    duplicates = {q: ids for q, ids in by_question.items() if len(ids) > 1}
    lost = {q: t for q, t in tally.acknowledged.items() if t not in by_question.get(q, [])}
    print(f"\nacknowledged {len(tally.acknowledged)} turns in {time.monotonic() - started:.0f} s, stored {len(stored)}, "
          f"given up {len(tally.given_up)}; faults {faults}; replies {dict(sorted(tally.statuses.items()))}")
    assert not any(client.is_alive() for client in clients)
    assert tally.errors == []
    assert duplicates == {}
    assert lost == {}
    assert len(tally.acknowledged) >= TURNS
    assert tally.statuses.get("keyed:503", 0) > 0  # the outages were met
