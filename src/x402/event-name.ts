/** The LangChain custom event name of payment events (its own module: the chat entry needs only the name). */
export const PAYMENT_EVENT_NAME = "x402_payment";
