-- The mailboxes that already received free credits before they were counted per mailbox
-- (docs/money.md, "Free credits"): each account with a signup_grant row claims its mailbox, the
-- earliest grant first, so a later sign-up of the same mailbox gets no second grant. The mailbox
-- is computed as shared/src/verify/mailbox.ts `normaliseMailbox` computed it when this migration
-- was written: the stored email is already lower-case; the local part is cut at the first '+'
-- (when something precedes it), and gmail.com and googlemail.com addresses lose their dots.
INSERT OR IGNORE INTO `signup_grant_mailboxes` (`mailbox`, `account_id`, `granted_at`)
SELECT
  CASE WHEN `domain` IN ('gmail.com', 'googlemail.com') AND replace(`user`, '.', '') <> ''
    THEN replace(`user`, '.', '') ELSE `user` END || '@' || `domain`,
  `account_id`,
  `granted_at`
FROM (
  SELECT
    `account_id`,
    `granted_at`,
    `domain`,
    CASE WHEN instr(`local`, '+') > 1 THEN substr(`local`, 1, instr(`local`, '+') - 1) ELSE `local` END AS `user`
  FROM (
    SELECT
      a.`id` AS `account_id`,
      l.`created_at` AS `granted_at`,
      substr(a.`email`, 1, instr(a.`email`, '@') - 1) AS `local`,
      rtrim(substr(a.`email`, instr(a.`email`, '@') + 1), '.') AS `domain`
    FROM `accounts` a
    JOIN `credit_ledger` l ON l.`account_id` = a.`id` AND l.`reason` = 'signup_grant'
    WHERE instr(a.`email`, '@') > 1
  )
)
ORDER BY `granted_at`, `account_id`;
