/**
 * `client.video` and `client.audio`: one object per kind of long-running job with the four routes and the whole
 * run (`generate`: quote, checks, queue once, poll, bytes).
 */
import type { ServiceApi } from "../api/request.js";
import {
  completeJob,
  queueJob,
  quoteJob,
  retrieveJob,
  type AudioJobParameters,
  type CallOptions,
  type JobKind,
  type JobQuote,
  type JobRef,
  type JobStatus,
  type QueuedJob,
  type VideoJobParameters,
} from "./jobs.js";
import { runJob, type JobResult, type RunJobOptions } from "./job-runner.js";

export interface JobsApi<P> {
  readonly kind: JobKind;
  /** POST /{kind}/quote: the price in USD (nothing charged) */
  quote(parameters: P, options?: CallOptions): Promise<JobQuote>;
  /** POST /{kind}/queue: enqueue, sent once (charged when the provider accepts it) */
  queue(parameters: P, options?: CallOptions): Promise<QueuedJob>;
  /** POST /{kind}/retrieve: the status, or the media */
  retrieve(ref: JobRef & { deleteMediaOnCompletion?: boolean }, options?: CallOptions): Promise<JobStatus>;
  /** POST /{kind}/complete: delete the stored media */
  complete(ref: JobRef, options?: CallOptions): Promise<boolean>;
  /** the whole run: quote, the owner's limits, queue once, recover a lost answer from the ledger, poll, the bytes */
  generate(parameters: P, options?: RunJobOptions): Promise<JobResult>;
}

export function jobsApi(client: ServiceApi, kind: "video"): JobsApi<VideoJobParameters>;
export function jobsApi(client: ServiceApi, kind: "audio"): JobsApi<AudioJobParameters>;
export function jobsApi(client: ServiceApi, kind: JobKind): JobsApi<VideoJobParameters> | JobsApi<AudioJobParameters> {
  return {
    kind,
    quote: (p: VideoJobParameters & AudioJobParameters, o?: CallOptions) => quoteJob(client, kind, p, o),
    queue: (p: VideoJobParameters & AudioJobParameters, o?: CallOptions) => queueJob(client, kind, p, o),
    retrieve: (ref, o) => retrieveJob(client, kind, ref, o),
    complete: (ref, o) => completeJob(client, kind, ref, o),
    generate: (p: VideoJobParameters & AudioJobParameters, o?: RunJobOptions) => runJob(client, kind, p, o),
  };
}
