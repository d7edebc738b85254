CREATE TABLE `job_address_filters` (
	`job_id` text PRIMARY KEY NOT NULL,
	`filter` blob NOT NULL
);
--> statement-breakpoint
CREATE TABLE `job_list_seqs` (
	`job_id` text PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `job_recheck_charges` (
	`job_id` text NOT NULL,
	`idx` integer NOT NULL,
	`round` integer NOT NULL,
	`applied` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`job_id`, `idx`)
);
--> statement-breakpoint
ALTER TABLE `jobs` ADD `lists_seq` integer DEFAULT 0 NOT NULL;