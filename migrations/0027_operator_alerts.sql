CREATE TABLE `operator_alerts` (
	`id` text PRIMARY KEY NOT NULL,
	`event_type` text NOT NULL,
	`region` text NOT NULL,
	`payload` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_status` integer,
	`last_error` text,
	`next_attempt_at` integer,
	`emailed_at` integer,
	`created_at` integer NOT NULL,
	`delivered_at` integer
);
--> statement-breakpoint
CREATE INDEX `operator_alerts_due` ON `operator_alerts` (`state`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `operator_alerts_created` ON `operator_alerts` (`created_at`);