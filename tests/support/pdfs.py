"""PDFs written by hand for tests: valid, image-only, encrypted, page-less, and scans of text."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont


def write_pdf(path: Path, objects: list[bytes], trailer: bytes = b"") -> Path:
    """A PDF whose object n is objects[n - 1] (object 1 the catalog), with a correct xref."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\n" % (len(objects) + 1, trailer)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    path.write_bytes(bytes(out))
    return path


def text_objects(text: bytes) -> list[bytes]:
    content = b"BT /F1 24 Tf 72 700 Td (%s) Tj ET" % text
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]


def image_pdf(path: Path, pages: int = 1) -> Path:
    font = ImageFont.load_default(size=40)
    images = []
    for n in range(pages):
        image = Image.new("L", (1275, 1650), 255)  # letter size at 150 dpi
        ImageDraw.Draw(image).text((100, 100), f"Scanned page {n + 1}", fill=0, font=font)
        images.append(image)
    images[0].save(path, format="PDF", resolution=150, save_all=True, append_images=images[1:])
    return path


def encrypted_pdf(path: Path) -> Path:
    """Standard security handler with a user password the empty password does not match:
    PDFium asks for a password, as it would for any password-protected file."""
    encrypt = (
        b"<< /Filter /Standard /V 1 /R 2 /P -4 /O <" + b"11" * 32 + b"> /U <" + b"22" * 32 + b"> >>"
    )
    file_id = b"<" + b"33" * 16 + b">"
    return write_pdf(
        path,
        [*text_objects(b"secret"), encrypt],
        trailer=b"/Encrypt 6 0 R /ID [%s %s] " % (file_id, file_id),
    )


def pageless_pdf(path: Path) -> Path:
    return write_pdf(
        path, [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    )


#: A notice's first lines in French, German and English, for telling a document's language.
FRENCH_NOTICE = (
    "AVIS D'APPEL PUBLIC À LA CONCURRENCE\n"
    "Objet du marché : entretien des espaces verts de la commune\n"
    "Procédure adaptée. Date limite de réception des offres : le 15 septembre\n"
    "2027 à 12 heures. Les candidats présentent leur offre sur le profil\n"
    "d'acheteur. Le marché est conclu pour une durée d'un an, renouvelable."
)
GERMAN_NOTICE = (
    "Bekanntmachung über die Vergabe eines öffentlichen Auftrags\n"
    "Gegenstand: Straßenreinigung und Winterdienst für die Gemeinde\n"
    "Die Angebote sind bis zum 15. September 2027, 12 Uhr, einzureichen.\n"
    "Der Auftrag wird für die Dauer von zwei Jahren vergeben und kann\n"
    "verlängert werden. Zuschlagskriterien sind der Preis und die Qualität."
)
ENGLISH_NOTICE = (
    "Contract notice for the maintenance of the district's roads\n"
    "Tenders shall be submitted by 15 September 2027 at 12:00 through the portal.\n"
    "The contract will be awarded to the most economically advantageous tender,\n"
    "and the authority may extend it by one year at the end of its term."
)


def scanned_pdf(path: Path, text: str, *, dpi: int = 300) -> Path:
    """An A4 scan of ``text`` in 11 pt type from an inch below the top: no text layer."""
    image = Image.new("L", (round(8.27 * dpi), round(11.69 * dpi)), 255)
    # Pillow's built-in font has no accented letters: DejaVu (Debian's fonts-dejavu-core).
    font = ImageFont.truetype("DejaVuSans.ttf", size=round(11 * dpi / 72))
    ImageDraw.Draw(image).multiline_text((dpi, dpi), text, font=font, fill=0, spacing=dpi // 8)
    image.save(path, format="PDF", resolution=dpi)
    return path
