// The edge's test files that link probers to the hub: a workerd of their own each (see vitest.project.ts).
import { edgeProject, edgeTestFiles } from './vitest.project.ts';

export default edgeProject({ name: 'edge-fleet', include: edgeTestFiles().ownWorkerd, isolate: true });
