"""A writer killed with SIGKILL mid-stream loses no committed event and leaves a
verifiable chain (and a projection that still equals its journal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from baton.memory import MemoryStore, Principal, TrustedAuthenticator

WRITER = textwrap.dedent("""
    import sys
    from baton.memory import MemoryStore, Principal, Provenance, RecordDraft, TrustedAuthenticator
    store = MemoryStore(sys.argv[1], authenticator=TrustedAuthenticator())
    scope = store.open(Principal("crash"))
    i = 0
    while True:  # runs until killed
        result = store.remember(scope, RecordDraft("learning", f"lesson {i % 50} about table t{i % 50}",
                                                   entity=f"t{i % 50}", attribute="rule", value=str(i % 7),
                                                   provenance=Provenance(session_id=f"s{i}")))
        print(result.seq, result.action, flush=True)  # printed only after the commit returned
        i += 1
""")


def test_sigkill_mid_stream_loses_no_committed_event(tmp_path):
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    MemoryStore(url).close()  # create the schema up front
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, str(script), url], stdout=subprocess.PIPE, text=True, env=env)
    committed: list[int] = []
    try:
        for line in proc.stdout:
            seq = int(line.split()[0])
            if seq:  # 0: nothing written (self-repetition)
                committed.append(seq)
            if len(committed) >= 150:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and len(committed) >= 150
    store = MemoryStore(url, authenticator=TrustedAuthenticator())
    scope = store.open(Principal("crash"))
    seqs = {e.seq for e in store.events(scope)}
    assert set(committed) <= seqs  # every acknowledged commit survived
    report = store.verify(scope)
    assert report.ok and report.events == len(seqs), report.problems
    assert store.check_projection(scope) == []
    store.close()
