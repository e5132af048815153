-- The audit of bulk actions by filter (as in the Postgres migration of the same number).
CREATE TABLE bulk_actions (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL    NOT NULL,
    who     TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    filter  TEXT    NOT NULL,
    matched INTEGER NOT NULL,
    done    INTEGER NOT NULL
);
