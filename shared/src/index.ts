export const probeValue: number = 42;
