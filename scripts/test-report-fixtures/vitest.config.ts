// Fixtures for scripts/test-report.test.ts: a run with every kind of failure the summary names.
import { defineConfig } from 'vitest/config';

export default defineConfig({ test: { include: ['*.test.ts'] } });
