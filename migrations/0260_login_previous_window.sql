-- The login limit counts the last minute as a sliding window (src/auth/login-throttle.ts): the
-- current window's attempts, and the window before's at the share of it the last minute still
-- covers. The window before's count is kept apart, so that an estimate is never counted again as
-- attempts of its own; a row lives for two windows, so that it is there to be counted.
ALTER TABLE login_throttles ADD COLUMN previous_attempts INTEGER NOT NULL DEFAULT 0;
