"""The DataFrame specialist: SQL over pandas DataFrames, CSV and Parquet files (DuckDB)."""

from baton.specialists.dataframe.agent import DataFrameAgent
from baton.specialists.dataframe.store import FrameStore, FrameStoreClosedError

__all__ = ["DataFrameAgent", "FrameStore", "FrameStoreClosedError"]
