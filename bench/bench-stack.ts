// The local stack as a benchmark starts it. The runner (run.ts) ends a bench that outlives its
// time limit with SIGTERM: the bench's edge and probers must go with it.
import {
  type LocalStack,
  type StackOptions,
  startLocalStack,
  stopStartedProcessesOnSigterm,
} from '../scripts/stack/local-stack.ts';

let stopsOnSigterm = false;

export function startBenchStack(options: StackOptions): Promise<LocalStack> {
  if (!stopsOnSigterm) stopStartedProcessesOnSigterm();
  stopsOnSigterm = true;
  return startLocalStack(options);
}
