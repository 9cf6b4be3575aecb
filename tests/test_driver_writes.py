"""``baton.state.driver_writes``: statements run on SQLite's own connection write what
``Connection.execute`` writes, and fail with SQLAlchemy's typed errors."""

import pytest
import sqlalchemy as sa

from baton.memory.engine import make_engine
from baton.state.driver_writes import execute_rows, first_row

ROWS = sa.Table("rows", sa.MetaData(), sa.Column("id", sa.String(10), primary_key=True), sa.Column("n", sa.Integer))


@pytest.fixture
def engine(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'w.sqlite'}")
    ROWS.metadata.create_all(engine)
    yield engine
    engine.dispose()


def test_rows_are_written_in_the_transaction(engine):
    with engine.connect() as conn, conn.begin():
        execute_rows(conn, ROWS.insert(), [{"n": 1, "id": "a"}, {"n": 2, "id": "b"}])  # keys in any order
    with engine.connect() as conn, conn.begin():
        execute_rows(conn, ROWS.insert(), [{"id": "c", "n": 3}])
        conn.rollback()
    with engine.connect() as conn:
        assert conn.execute(sa.select(ROWS.c.id, ROWS.c.n).order_by(ROWS.c.id)).all() == [("a", 1), ("b", 2)]


def test_a_duplicate_is_sqlalchemys_integrity_error(engine):
    with engine.connect() as conn, conn.begin():
        execute_rows(conn, ROWS.insert(), [{"id": "a", "n": 1}])
    with pytest.raises(sa.exc.IntegrityError), engine.connect() as conn, conn.begin():
        execute_rows(conn, ROWS.insert(), [{"id": "a", "n": 2}])


def test_first_row_is_the_returned_row_or_none(engine):
    upsert = sa.insert(ROWS).values(id=sa.bindparam("key"), n=sa.bindparam("value")).prefix_with("OR IGNORE").returning(ROWS.c.id)
    with engine.connect() as conn, conn.begin():
        assert first_row(conn, upsert, {"key": "a", "value": 1}) == ("a",)
        assert first_row(conn, upsert, {"key": "a", "value": 2}) is None  # ignored: nothing returned
    with engine.connect() as conn:
        assert conn.execute(sa.select(ROWS.c.n)).scalar_one() == 1
