-- As migrations/0260_login_previous_window.sql: the window before's attempts, kept apart.
ALTER TABLE login_throttles ADD COLUMN previous_attempts integer NOT NULL DEFAULT 0;
