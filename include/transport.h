/* SPDX-License-Identifier: MIT */
/*
 * The modem's USB function seen as transfers on four endpoint kinds. One interface,
 * several backends: `usb` (libusb async, the modem), `sim` (AF_UNIX SOCK_SEQPACKET to
 * qmapd-sim, one message = one transfer) and, for tests and benchmarks only, `mem`
 * (in-process replay, tests/support/transport-mem.c).
 *
 * Downlink: the transport owns a ring of >= 16 receive buffers of dl_max_size bytes,
 * allocated once. Each completed bulk IN transfer is handed to on_bulk_in(); after a batch of
 * them, on_bulk_in_done() is called and only then do the buffers go back to the ring
 * (resubmitted), so pointers into them stay valid until on_bulk_in_done() returns. Each
 * buffer has TRANSPORT_RX_HEADROOM bytes of its own before it, which nothing else (no other
 * transfer, no DMA) touches: the receiver may write there during on_bulk_in() (the datapath
 * puts a device header in front of a packet there, to write both with one write()).
 * Uplink: bulk OUT buffers are borrowed with transport_out_get(), filled in place, and
 * handed back with transport_out_submit(); while none is free, on_out_ready() tells the
 * datapath when to resume reading its devices.
 */
#ifndef QMAPD_TRANSPORT_H
#define QMAPD_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ntb.h"

struct ev_loop;

/* Endpoint kinds, also the first byte of every sim message. */
enum transport_ep {
	TRANSPORT_EP_BULK_IN = 1,  /* modem -> host data */
	TRANSPORT_EP_BULK_OUT = 2, /* host -> modem data */
	TRANSPORT_EP_CONTROL = 3,  /* encapsulated command (host->modem) / response (modem->host) */
	TRANSPORT_EP_INTERRUPT = 4, /* notifications, modem -> host */
	/* sim only, modem -> host, the first message of a connection: what the USB descriptors
	 * would say (struct transport_sim_descriptor). */
	TRANSPORT_EP_DESCRIPTOR = 5,
	/* sim only, both ways: a class request on the default control pipe and its completion
	 * (struct transport_sim_class_request); what cdc_ncm sends before data flows. */
	TRANSPORT_EP_CLASS_REQUEST = 6,
};

/* The sim wire format: this header, then the transfer's bytes, in one SEQPACKET message. */
struct transport_sim_header {
	uint8_t ep;	   /* enum transport_ep */
	uint8_t flags;	   /* TRANSPORT_SIM_FLAG_* */
	uint16_t reserved; /* 0 */
} __attribute__((packed));

/* The USB function the sim plays (struct transport_sim_descriptor.function). */
enum transport_sim_function {
	TRANSPORT_SIM_FUNCTION_QMI = 0,	 /* vendor interface ff/ff/ff: QMI control, QMAP data */
	TRANSPORT_SIM_FUNCTION_MBIM = 1, /* MBIM 02/0e + data 0a/00/02: MBIM control, NTB data */
};

/*
 * The payload of a TRANSPORT_EP_DESCRIPTOR message. A QMI function sends these 4 bytes only
 * (older sims sent function 0 as a reserved byte: QMI). An MBIM function follows them with
 * struct transport_sim_mbim_descriptor; a host reads what it knows and ignores the rest.
 */
struct transport_sim_descriptor {
	uint8_t interface_number; /* the data interface's bInterfaceNumber */
	uint8_t function;	  /* enum transport_sim_function */
	uint8_t reserved[2];	  /* 0 */
} __attribute__((packed));

/*
 * What the MBIM function's descriptors and GET_NTB_PARAMETERS would tell cdc_mbim, so the
 * host negotiates as it would over USB (docs/PROTOCOLS.md §3.4). Little-endian, as on USB.
 * Until the host says otherwise (TRANSPORT_EP_CLASS_REQUEST) the function sends NTB16 of at
 * most dwNtbInMaxSize bytes (NCM 1.0 §6.2.5, §6.2.7).
 */
struct transport_sim_mbim_descriptor {
	uint8_t ntb_parameters[28];   /* the GET_NTB_PARAMETERS answer, byte for byte */
	uint16_t max_control_message; /* MBIM functional descriptor wMaxControlMessage */
	uint16_t max_segment_size;    /* ... wMaxSegmentSize */
	uint16_t mtu;		      /* MBIM extended functional descriptor wMTU; 0 = none */
	uint16_t reserved;	      /* 0 */
} __attribute__((packed));

/*
 * A class request (TRANSPORT_EP_CLASS_REQUEST), host -> sim: this setup packet, then wLength
 * data bytes for a host-to-device request (bmRequestType 0x21) and none for a device-to-host
 * one (0xa1). The sim answers every request, in order, with a TRANSPORT_EP_CLASS_REQUEST
 * message of its own: the same setup packet, then for 0xa1 the data (at most wLength bytes),
 * with TRANSPORT_SIM_FLAG_STALL in the header when the function refused the request (what a
 * USB STALL handshake says). Requests the MBIM sim knows (cdc.h; NCM 1.0 §6.2):
 *   0x80 GET_NTB_PARAMETERS (0xa1): the 28 bytes of the descriptor
 *   0x83 GET_NTB_FORMAT (0xa1), 0x84 SET_NTB_FORMAT (0x21, wValue 0 NTB16, 1 NTB32)
 *   0x85 GET_NTB_INPUT_SIZE (0xa1), 0x86 SET_NTB_INPUT_SIZE (0x21, 4 bytes dwNtbInMaxSize or
 *        8 bytes adding wNtbInMaxDatagrams and a reserved u16)
 *   0x89 GET_CRC_MODE, 0x8a SET_CRC_MODE (wValue 0 only: the function offers no CRC)
 * SET_NTB_FORMAT and SET_NTB_INPUT_SIZE are refused while a session is active (the data
 * interface would be in its data alternate setting, NCM 1.0 §6.2.5), as are a format the
 * function does not support and an input size below 2048 or above dwNtbInMaxSize. wIndex
 * (the communications interface, on USB) is not checked: the sim plays one function.
 */
struct transport_sim_class_request {
	uint8_t request_type; /* bmRequestType */
	uint8_t request;      /* bRequest */
	uint16_t value;	      /* wValue, little-endian */
	uint16_t index;	      /* wIndex */
	uint16_t length;      /* wLength */
} __attribute__((packed));

#define TRANSPORT_SIM_FLAG_ZLP 0x01 /* the OUT transfer was terminated by a zero-length packet */
/*
 * On a bulk OUT message: the host counts the transfer in flight until the modem takes it, and
 * the sim says when with a bulk OUT message of its own whose payload is a uint32_t (native
 * order): how many more flagged transfers it has taken, in order. A transfer the modem
 * cannot take yet stays unread and unacknowledged, as a NAKed USB OUT transfer stays pending.
 */
#define TRANSPORT_SIM_FLAG_ACK 0x02
/* On a class request answer: the function refused it (STALL). */
#define TRANSPORT_SIM_FLAG_STALL 0x04

/* Largest transfer any backend carries (the biggest QMAP/NTB aggregate a modem grants). */
#define TRANSPORT_MAX_TRANSFER 65536
/* Bytes before each receive buffer that are the receiver's alone (a cache line). */
#define TRANSPORT_RX_HEADROOM 64

struct transport_callbacks {
	void (*on_bulk_in)(void *userdata, uint8_t *buf, size_t len);
	/*
	 * A batch of completed IN transfers was handed over; their buffers are reused after this
	 * returns (so a consumer may keep pointers into them until then, e.g. GRO).
	 */
	void (*on_bulk_in_done)(void *userdata);
	void (*on_control)(void *userdata, const uint8_t *buf, size_t len);
	void (*on_interrupt)(void *userdata, const uint8_t *buf, size_t len);
	/* An OUT transfer of len bytes completed (or failed): the modem took it. Optional. */
	void (*on_out_complete)(void *userdata, size_t len);
	/* An OUT buffer became free after transport_out_get() had returned NULL. */
	void (*on_out_ready)(void *userdata);
	/* The modem is there (sim connected, USB claimed): transfers flow. */
	void (*on_connect)(void *userdata);
	/* The modem went away (sim closed, USB unplugged). Transfers are all completed. */
	void (*on_disconnect)(void *userdata);
};

struct transport_params {
	uint32_t dl_max_size; /* bytes per receive transfer until the modem grants a size */
	/* Room of every receive buffer (0 = dl_max_size): the largest grant that can be used
	 * without re-allocating, since a modem may grant more than was asked. */
	uint32_t dl_buffer_size;
	uint32_t rx_transfers;	  /* receive buffers in flight; raised to 16 if lower */
	uint32_t ul_max_size;	  /* bytes per OUT buffer */
	uint32_t ul_buffers;	  /* OUT buffers (0 = default) */
	uint32_t max_packet_size; /* wMaxPacketSize of bulk OUT, for the ZLP rule */
	uint32_t ul_headroom;	  /* bytes reserved in front of every OUT buffer */
	/* MBIM: the NTB format to ask for (16 or 32, 0 = 16) when the function offers it. */
	uint8_t ntb_format;
};

/* How the data interface frames IP packets: what the function is, learnt when it appears. */
enum transport_framing {
	TRANSPORT_FRAMING_QMAP, /* QMI function (vendor interface): QMAP aggregates */
	TRANSPORT_FRAMING_NTB,	/* MBIM function: NCM Transfer Blocks, one NDP per session */
};

/*
 * What the MBIM function and the host agreed on (NCM 1.0 §6.2), set before on_connect and
 * kept until on_disconnect. Both directions use `format`; downlink NTBs are at most in_size.
 */
struct transport_ntb {
	struct ntb_params params;     /* GET_NTB_PARAMETERS, corrected as cdc_ncm does */
	enum ntb_format format;	      /* SET_NTB_FORMAT's, or NTB16 if it was refused */
	uint32_t in_size;	      /* SET_NTB_INPUT_SIZE's, or dwNtbInMaxSize if refused */
	uint16_t max_control_message; /* MBIM functional descriptor's, as the transport takes it */
	uint16_t max_segment_size;
	uint16_t mtu; /* MBIM extended functional descriptor; 0 = none */
	/* USB: the communications interface (-1: not USB), the data alternate setting, the
	 * MBIM functional descriptor's bmNetworkCapabilities. */
	int16_t control_interface;
	uint8_t data_alt;
	uint8_t network_capabilities;
	/* The function offers no CRC: SET_CRC_MODE(off) was STALLed, or not sent because
	 * bmNetworkCapabilities says so. */
	bool crc_refused;
	bool format_refused;   /* SET_NTB_FORMAT was STALLed */
	bool in_size_refused;  /* SET_NTB_INPUT_SIZE was STALLed */
	bool params_from_desc; /* GET_NTB_PARAMETERS failed: the descriptor's copy is used */
};

/* A borrowed OUT buffer: data[-headroom .. size) is writable. */
struct transport_out {
	uint8_t *data;
	size_t size;
	size_t len;		    /* filled by the caller */
	bool zlp;		    /* set by transport_out_submit() */
	uint32_t index;		    /* in the pool */
	struct transport_out *next; /* backends' queue of OUT transfers waiting to go */
};

struct transport;

struct transport_ops {
	const char *scheme; /* "sim:" ... */
	size_t size;	    /* of the backend's struct, which starts with struct transport */
	/* Parse the address after the scheme; called once after the buffers exist. */
	int (*init)(struct transport *t, const char *address);
	int (*start)(struct transport *t);
	void (*stop)(struct transport *t);
	/* Send len bytes from out->data; the ZLP flag is decided by the caller of the op. */
	int (*out_submit)(struct transport *t, struct transport_out *out, bool zlp);
	int (*control_send)(struct transport *t, const uint8_t *buf, size_t len);
	/* Optional: params.dl_max_size changed (never above rx_buf_size). */
	void (*dl_size_changed)(struct transport *t);
	void (*free)(struct transport *t);
};

struct transport_stats {
	uint64_t in_transfers;
	uint64_t in_bytes;
	uint64_t in_errors;    /* short/overflow/protocol errors by the backend */
	uint64_t in_overflows; /* of those: a transfer larger than the receive buffer */
	uint64_t in_mapped;    /* of in_transfers: received into usbfs-mapped memory (no copy) */
	uint64_t out_transfers;
	uint64_t out_bytes;
	uint64_t out_zlp;
	uint64_t out_errors;
	uint64_t out_busy;     /* times the datapath found no free OUT buffer */
	uint64_t in_batch_max; /* most transfers completed in one wakeup (<= n_rx) */
	/* The control path (usb): encapsulated commands and responses. */
	uint64_t ctrl_retries; /* SEND_ENCAPSULATED_COMMAND failed and was sent again */
	uint64_t ctrl_errors;  /* ... failed every try: the request was lost */
	uint64_t resp_errors;  /* GET_ENCAPSULATED_RESPONSE failed (retried on the next) */
	uint64_t resp_polled;  /* responses fetched without a RESPONSE_AVAILABLE */
	uint64_t resp_drained; /* ... by asking again after a response, more than announced */
	/* Endpoint halts cleared: one per halt, however many transfers it failed. */
	uint64_t halts_cleared;
};

struct transport {
	const struct transport_ops *ops;
	struct ev_loop *loop;
	struct transport_params params;
	struct transport_callbacks cb;
	void *userdata;
	struct transport_stats stats;

	/* The data interface's bInterfaceNumber: the USB descriptor's, known when the modem is
	 * claimed, or what the sim's descriptor message (its first) says; -1 until known.
	 * QMI names it in Endpoint Info. */
	int data_interface;

	/* The USB device's manufacturer and product strings (iManufacturer, iProduct), read
	 * when the modem is claimed; "" unknown (none, unreadable, or the sim). MBIM has no
	 * manufacturer or model (DEVICE_CAPS), and ModemManager names MBIM modems by these.
	 * 128: a string descriptor holds at most 126 characters. */
	char manufacturer[128], product[128];
	/* Its idVendor and idProduct (ModemManager's DeviceIdentifier hashes them); 0 unknown
	 * (the sim). */
	uint16_t vid, pid;
	/* The kernel's name for the control interface while its driver held it (cdc-wdm0, what
	 * ModemManager shows as PrimaryPort), read before qmapd detaches the driver; ""
	 * unknown (the sim, or no driver was bound). */
	char control_port[32];

	/* A restart (transport_keep_modem()): let go of the modem as a crashed process would,
	 * without dropping DTR or giving the interface back to the kernel driver, so that its
	 * sessions and client ids stay for the next qmapd (docs/ARCHITECTURE.md "Restart and
	 * crash"). */
	bool keep_modem;

	/* QMAP unless the function is MBIM; then ntb holds the negotiated parameters. */
	enum transport_framing framing;
	struct transport_ntb ntb;

	/* Receive ring, allocated once for the largest size; params.dl_max_size is in use. */
	uint8_t **rx_buf;
	uint32_t n_rx;
	uint32_t rx_buf_size;

	/* OUT pool, allocated once; free list as a stack of indices. */
	struct transport_out *out;
	uint8_t *out_mem;
	uint32_t n_out;
	uint32_t *out_free;
	uint32_t n_out_free;
	bool out_waiting; /* someone saw an empty pool: call on_out_ready when one frees */
};

/*
 * Create a transport for `spec`: "usb:VID:PID", "usb-path:..." or "sim:/path/to/socket".
 * Allocates every buffer. Returns 0 or -errno (-EPROTONOSUPPORT for an unknown scheme).
 */
int transport_new(struct ev_loop *loop, const char *spec, const struct transport_params *params,
		  const struct transport_callbacks *cb, void *userdata, struct transport **ret);
/* The same over a backend the caller names, with the address after its scheme. */
int transport_new_with_backend(struct ev_loop *loop, const struct transport_ops *ops,
			       const char *address, const struct transport_params *params,
			       const struct transport_callbacks *cb, void *userdata,
			       struct transport **ret);
struct transport *transport_free(struct transport *t);

int transport_start(struct transport *t);
/* Receive transfers of this size from now on (what the modem granted). -EINVAL if larger
 * than the buffers or 0. */
int transport_set_dl_size(struct transport *t, uint32_t dl_max_size);
/* Stop (and free) without telling the modem we are gone: transport.h's keep_modem. */
void transport_keep_modem(struct transport *t);
void transport_stop(struct transport *t);

/* Borrow an OUT buffer, or NULL when all are in flight (on_out_ready follows). */
struct transport_out *transport_out_get(struct transport *t);
/*
 * The same, but NULL while only `keep` buffers or fewer are free (on_out_ready follows when
 * one more frees): the data path leaves the last one to command ACKs.
 */
struct transport_out *transport_out_get_keep(struct transport *t, uint32_t keep);
/* Send a filled OUT buffer; ownership returns to the transport. Adds the ZLP flag when
 * len is a multiple of max_packet_size. */
int transport_out_submit(struct transport *t, struct transport_out *out);
/* Give back a borrowed buffer unsent. */
void transport_out_put(struct transport *t, struct transport_out *out);

int transport_control_send(struct transport *t, const uint8_t *buf, size_t len);

/* For backends: called when an OUT transfer completed. */
void transport_out_complete(struct transport *t, struct transport_out *out);

/* The daemon's backends (src/daemon/transport/). */
extern const struct transport_ops transport_sim_ops; /* "sim:" */
extern const struct transport_ops transport_usb_ops; /* "usb:", "usb-path:" */

#endif
