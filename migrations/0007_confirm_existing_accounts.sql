-- Accounts made before email confirmation existed already received their free credits (their
-- signup_grant row is in the ledger): they count as confirmed since they were created.
UPDATE `accounts` SET `email_confirmed_at` = `created_at` WHERE `email_confirmed_at` IS NULL;
