"""Racing answers across two ``handrail serve`` processes on one PostgreSQL database (see
`racing`): every ask gets two answers at once, one to each process; exactly one wins."""

from __future__ import annotations

from pathlib import Path

from racing import race_answers

from _pg import PostgresCluster

ASKS = 20


async def test_two_processes_race_answers_one_winner_each(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    figures = await race_answers(postgres_cluster.new_database_url(), tmp_path, asks=ASKS)
    assert not figures.problems, "\n".join(figures.problems)
    assert figures.statuses == {"200": ASKS, "409": ASKS}
    assert sum(figures.won.values()) == ASKS
