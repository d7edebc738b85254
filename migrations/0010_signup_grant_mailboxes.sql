CREATE TABLE `signup_grant_mailboxes` (
	`mailbox` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`granted_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
