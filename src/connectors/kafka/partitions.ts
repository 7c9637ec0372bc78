/** How a topic's partitions spread over a source's subtasks (the source and the tests agree through this). */

/** Which subtask reads `partition` of `topic`. */
export function ownerOf(topic: string, partition: number, parallelism: number): number {
  let h = 0;
  for (let i = 0; i < topic.length; i++) h = (Math.imul(31, h) + topic.charCodeAt(i)) | 0;
  return (((h & 0x7fffffff) % parallelism) + partition) % parallelism;
}
