// The edge's test files that share a workerd per worker (see vitest.project.ts).
import { edgeProject, edgeTestFiles } from './vitest.project.ts';

export default edgeProject({ name: 'edge', include: edgeTestFiles().shared, isolate: false });
