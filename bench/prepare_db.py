"""Make the benchmarks' database ready: create the PostgreSQL database DATABASE_URL names when it is
missing, then apply the migrations (what `make bench` runs first, so it works on a new machine)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]


def create_database(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        return
    import psycopg
    from psycopg import sql

    name = parts.path.lstrip("/")
    server = parts._replace(path="/postgres").geturl()
    with psycopg.connect(server, autocommit=True) as connection:
        if connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            print(f"bench: created database {name}")


def main() -> None:
    url = os.environ.get("DATABASE_URL", "")
    if url:
        create_database(url)
    env = os.environ | {"DEBUG": "1"}  # migrate needs no SECRET_KEY then; the bench itself runs with DEBUG off
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"], check=True, env=env)


if __name__ == "__main__":
    main()
