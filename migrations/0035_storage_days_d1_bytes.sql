ALTER TABLE `storage_days` ADD `d1_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- What was counted before is taken as written to D1: a day or two of counts, on the high side.
UPDATE `storage_days` SET `d1_bytes` = `bytes`;
