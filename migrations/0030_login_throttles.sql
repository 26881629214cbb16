-- Login brute-force throttle: one row per subject (an email or a client address) that has recent
-- login attempts. Attempts are counted before the password is checked, so concurrent guesses
-- cannot slip past the limit; a success clears the email's row and refunds the address's count.

CREATE TABLE login_throttles (
  subject TEXT PRIMARY KEY,          -- 'email:<lower-cased address>' or 'ip:<address or IPv6 /64>'
  window_start INTEGER NOT NULL,     -- first counted attempt of the current one-minute window
  attempts INTEGER NOT NULL,
  locked_until INTEGER,              -- set when attempts reach INBOXD_LOGIN_MAX_FAILURES
  expires_at INTEGER NOT NULL        -- when the row stops mattering (window end or lock end)
);
CREATE INDEX login_throttles_expiry ON login_throttles(expires_at);
