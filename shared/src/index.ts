export * from './contract/api.ts';
export * from './contract/prober.ts';
export * from './errors.ts';
