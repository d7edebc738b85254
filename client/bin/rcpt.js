#!/usr/bin/env node
// The `rcpt` command. There is no build step: Node 22.18+ runs the TypeScript sources directly
// by stripping their types, so this launcher only checks the version and loads them.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `rcpt: Node.js 22.18 or later is required (it runs TypeScript natively); this is ${process.version}`,
  );
  process.exit(2);
}
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
